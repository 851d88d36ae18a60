import AvatarWorker
import Testing

@Suite("docs/CONFIGURATION.md is generated from the key table")
struct ConfigurationReferenceTests {
    @Test("the committed reference is what `config --markdown` prints now")
    func noDrift() throws {
        let committed = try Repo.text("docs/CONFIGURATION.md")
        #expect(
            committed == ConfigurationReference.markdown(),
            "regenerate: swift run avatar-cropper config --markdown > docs/CONFIGURATION.md")
    }

    @Test("every key has a row, and the README points at the reference")
    func everyKey() throws {
        let reference = ConfigurationReference.markdown()
        for key in ConfigurationKey.all {
            #expect(reference.contains("| `\(key.name)` | `\(key.environmentName)` |"), "\(key.name)")
        }
        #expect(try Repo.text("README.md").contains("docs/CONFIGURATION.md"))
    }
}
