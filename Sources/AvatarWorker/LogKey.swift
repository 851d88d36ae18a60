/// Logging metadata keys, in one place. Logs carry job ids, never user ids, storage
/// keys, paths or image bytes.
public enum LogKey {
    public static let jobID = "job_id"
    public static let avatarVersion = "avatar_version"
    public static let partition = "partition"
    public static let offset = "offset"
    public static let errorCode = "error_code"
    public static let outcome = "outcome"
    /// Ledger rows a forget or a prune deleted.
    public static let ledgerRows = "ledger_rows"
    /// Avatar objects a forget deleted.
    public static let objectsDeleted = "objects_deleted"
}
