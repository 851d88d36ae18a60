import Logging

/// Logging metadata keys of the Database module, in one place.
enum DatabaseLogKey {
    static let sqlState = "db.sqlstate"
    static let severity = "db.severity"
    static let errorCode = "db.error_code"
    static let backendPID = "db.backend_pid"
    static let migrationVersion = "db.migration.version"
    static let migrationName = "db.migration.name"
    static let poolSize = "db.pool.size"
    static let error = "db.error"
}
