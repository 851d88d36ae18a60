/// Digests of stored bytes, for callers that record what they published.
public enum ObjectDigest {
    /// Lower-case hex SHA-256 of `bytes` (what `sha256sum` prints).
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        Hex.sha256(bytes)
    }
}
