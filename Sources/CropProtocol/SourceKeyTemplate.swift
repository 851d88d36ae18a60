import Foundation

/// Where a user's uploads may be read from, e.g. `uploads/{user_id}/`: a request's `source_key`
/// must start with the template, `{user_id}` replaced by the request's canonical (lower-case)
/// user id. Without one, the worker reads any key a request names: producers are trusted to tie
/// `source_key` to `user_id` (docs/SECURITY.md, "Producers are trusted").
public struct SourceKeyTemplate: Sendable, Hashable, CustomStringConvertible {
    /// Where the user id goes.
    public static let placeholder = "{user_id}"

    /// Text before and after the placeholder.
    let head: String
    let tail: String

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// Accepts a template with exactly one `{user_id}`, ending with `/` (so the user's prefix ends
    /// at a segment boundary), whose expansion is a valid object-key prefix (no `.`, `..` or empty
    /// segment, no backslash or control character).
    public init(_ text: String) throws(Invalid) {
        let parts = text.components(separatedBy: Self.placeholder)
        guard parts.count == 2 else {
            throw Invalid(description: "the source-key template must contain \(Self.placeholder) exactly once")
        }
        guard text.hasSuffix("/") else { throw Invalid(description: "the source-key template must end with /") }
        head = parts[0]
        tail = parts[1]
        // A sample expansion plus one file name must be a valid key: then every expansion's segments are.
        let sample = head + "00000000-0000-4000-8000-000000000001" + tail + "x"
        guard CropRequestLimits.isValidSourceKey(sample) else {
            throw Invalid(description: "the source-key template is not a valid object-key prefix")
        }
    }

    public var description: String { head + Self.placeholder + tail }

    /// What every permitted key starts with, whoever the user: the text before `{user_id}`.
    public var fixedPrefix: String { head }

    /// The prefix the user's source keys must start with.
    public func prefix(for userID: UUID) -> String { head + userID.uuidString.lowercased() + tail }

    /// Whether `key` lies under `userID`'s prefix, compared byte for byte.
    public func permits(_ key: String, userID: UUID) -> Bool {
        key.utf8.starts(with: prefix(for: userID).utf8)
    }
}

extension ValidatedCropRequest {
    /// Throws `INVALID_REQUEST` (`invalidValue("source_key")`) unless the source key lies under
    /// `template`'s prefix for this request's user; with no template every key passes.
    public func checkSourceKey(_ template: SourceKeyTemplate?) throws(ProtocolError) {
        guard let template, !template.permits(sourceKey, userID: userID) else { return }
        throw ProtocolError(
            .invalidValue("source_key"), reason: "source_key is not under the user's uploads (\(template))",
            jobID: jobID, userID: userID)
    }
}
