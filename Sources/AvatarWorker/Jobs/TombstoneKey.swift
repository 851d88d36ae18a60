import Database
import Storage

/// The key forget tombstones are kept under (`database.tombstone-key`; docs/DATA.md, window 8). A tombstone is
/// HMAC-SHA256(key, the user id's lower-case text), never the raw id: migration 0012's `avatar_user_key` computes it
/// in the database, from the key every connection of the worker and of its commands carries as a startup setting
/// (`DatabaseConfiguration.startupSettings`, so no statement log shows it). A session without it cannot write or
/// look up a tombstone (SQLSTATE AV004), so the worker and its commands refuse to start without one.
public enum TombstoneKey {
    /// The session setting migration 0012 reads: the key's bytes (its UTF-8), hex-encoded.
    public static let setting = "avatar.tombstone_key"
    /// The shortest key accepted: 32 bytes, SHA-256's own size (e.g. `openssl rand -hex 32` gives 64).
    public static let minimumLength = 32

    /// Makes every connection of `configuration` carry `secret`; refuses one shorter than `minimumLength`.
    public static func apply(_ secret: String, to configuration: inout DatabaseConfiguration) throws {
        guard secret.utf8.count >= minimumLength else {
            throw ConfigurationValues.Error(
                description:
                    "\(ConfigurationKey.databaseTombstoneKey.name) must be at least \(minimumLength) characters")
        }
        configuration.startupSettings[setting] = Hex.encode(secret.utf8)
    }
}
