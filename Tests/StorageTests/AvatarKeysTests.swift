import CropGeometry
import Foundation
import Storage
import Testing

/// The key layout of published avatars (docs/ARCHITECTURE.md §3).
@Suite("Avatar keys")
struct AvatarKeysTests {
    private let user = UUID(uuidString: "8F14E45F-CEEA-467A-9575-6B2C3F1A9E11")!

    @Test("avatar keys stay under the user's lower-cased prefix")
    func avatarKeys() throws {
        #expect(AvatarKeys.userPrefix(user) == "users/8f14e45f-ceea-467a-9575-6b2c3f1a9e11/")
        let png = AvatarKeys.avatarKey(userID: user, size: 512, format: .png)
        let jpeg = AvatarKeys.avatarKey(userID: user, size: 80, format: .jpeg)
        #expect(png == "users/8f14e45f-ceea-467a-9575-6b2c3f1a9e11/avatar_512.png")
        #expect(jpeg == "users/8f14e45f-ceea-467a-9575-6b2c3f1a9e11/avatar_80.jpg")
        for key in [png, jpeg, AvatarKeys.versionedKey(png, version: 7, publication: "3f2a")] {
            #expect(ObjectKey.isValid(key), "\(key)")
        }
    }

    @Test("the versioned object of a published key sits in the user's folder")
    func versionedKey() {
        let key = AvatarKeys.avatarKey(userID: user, size: 512, format: .png)
        #expect(
            AvatarKeys.versionedKey(key, version: 7)
                == "users/8f14e45f-ceea-467a-9575-6b2c3f1a9e11/versions/7/avatar_512.png"
        )
        // A publication's own folder (docs/ARCHITECTURE.md §7).
        #expect(
            AvatarKeys.versionedKey(key, version: 7, publication: "3f2a")
                == "users/8f14e45f-ceea-467a-9575-6b2c3f1a9e11/versions/7/3f2a/avatar_512.png")
    }

    @Test("the public URL busts caches with the version; no base URL, no URL")
    func versionedURL() {
        #expect(
            AvatarKeys.versionedURL(
                baseURL: "https://cdn.example.com", key: "users/u/avatar_512.png", version: 12)
                == "https://cdn.example.com/users/u/avatar_512.png?v=12")
        #expect(
            AvatarKeys.versionedURL(
                baseURL: "https://cdn.example.com/avatars//", key: "users/u/a.png", version: 7)
                == "https://cdn.example.com/avatars/users/u/a.png?v=7")
        #expect(AvatarKeys.versionedURL(baseURL: "", key: "users/u/avatar_512.png", version: 12) == "")
    }
}
