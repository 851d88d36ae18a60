import Storage
import Testing

@Suite struct ObjectKeyTests {
    @Test(arguments: [
        "users/0b7c/avatar_512.png", "a", "a/b/c.d", "with space/ü名.png", "...x", "a..b/c", ".hidden",
        String(repeating: "k", count: 1024),
    ])
    func acceptsRelativePathsOfNonEmptySegments(_ key: String) throws {
        try ObjectKey.validate(key)
        #expect(ObjectKey.isValid(key))
    }

    @Test(arguments: [
        "", "/absolute", "../escape", "a/../../etc/passwd", "a/..", "..", "./a", "a/./b", ".", "a//b", "a/",
        "a\\b", "..\\windows", "nul\u{0}byte", "new\nline", "tab\tkey", "del\u{7F}", "c1\u{85}control",
        String(repeating: "k", count: 1025), String(repeating: "é", count: 513),
    ])
    func rejectsTraversalControlCharactersAndOversizedKeys(_ key: String) {
        #expect(!ObjectKey.isValid(key))
        do {
            try ObjectKey.validate(key)
            Issue.record("accepted an invalid key")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(!error.isTransient)
        }
    }

    @Test func errorDescriptionNeverContainsTheKey() {
        let key = "users/secret-user-id/../x"
        do {
            try ObjectKey.validate(key)
            Issue.record("accepted an invalid key")
        } catch {
            #expect(!error.description.contains("secret-user-id"))
            #expect(!error.debugDescription.contains("secret-user-id"))
        }
    }
}
