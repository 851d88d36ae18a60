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

    /// docs/ARCHITECTURE.md §7: U+0600 (a "prepend" character) joins the following `/` into one
    /// Character, so a split on Characters saw `a\u{0600}/..` as one segment while the filesystem
    /// (and S3) see `a\u{0600}`, `..`. The rules hold on the key's UTF-8 bytes.
    @Test(arguments: [
        "a\u{0600}/../b", "a\u{0600}/..", "\u{0600}/../x", "a/\u{0600}/./b", "a\u{0600}//b", "a\u{0600}/",
        "a\u{06DD}/../b", "a\u{110BD}/../b", "a\u{0D4E}/./b",
    ])
    func rulesHoldOnBytesNotCharacters(_ key: String) {
        #expect(!ObjectKey.isValid(key), "\(Array(key.unicodeScalars))")
    }

    /// The same bytes where nothing precedes the slash: a prepend character in a segment's
    /// middle or end, with an ordinary segment after it, is a valid key.
    @Test(arguments: ["a\u{0600}/b", "\u{0600}x/y", "a/b\u{0600}"])
    func prependCharactersInsideSegmentsAreAccepted(_ key: String) {
        #expect(ObjectKey.isValid(key))
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
