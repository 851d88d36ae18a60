/// How to reach Postgres. Plain data, filled by the CLI from flags, environment and file.
///
/// The `url` may hold a password: this type's `description` never prints it, and nothing in this module logs it.
public struct DatabaseConfiguration: Sendable {
    /// A libpq conninfo string (`host=… dbname=…`) or a `postgresql://` URL. Settings in it (for example
    /// `application_name` or `connect_timeout`) win over the fields below; `client_encoding` is always UTF8.
    public var url: String
    /// Applied on every connect with `set_config('search_path', …)`: the schema of a test or of a tenant.
    /// `nil` keeps the server's default.
    public var searchPath: String?
    /// Shown in `pg_stat_activity`.
    public var applicationName: String = "avatar-cropper"
    /// libpq `connect_timeout`, rounded up to whole seconds (libpq's minimum is 2 s).
    public var connectTimeout: Duration = .seconds(5)
    /// Session `statement_timeout`; `nil` keeps the server's default. A statement that runs longer fails
    /// with `SQLState.queryCanceled`.
    public var statementTimeout: Duration?
    /// Session `lock_timeout`; `nil` keeps the server's default. A statement that waits longer for a lock
    /// fails with `SQLState.lockNotAvailable`.
    public var lockTimeout: Duration?
    /// Further session settings applied on every connect with `set_config` (a custom setting's name has a dot,
    /// e.g. `avatar.max_request_age`, which migration 0011's functions read).
    public var sessionSettings: [String: String] = [:]
    /// Session settings sent in the connection's startup packet (libpq `options`, after the URL's own `options` or
    /// `PGOPTIONS`), never in a statement, so a server that logs statements and their parameters does not log them:
    /// for a secret (e.g. `avatar.tombstone_key`, which migration 0012's functions read). The values must not
    /// contain spaces or backslashes; `description` never prints them.
    public var startupSettings: [String: String] = [:]

    public init(url: String, searchPath: String? = nil) {
        self.url = url
        self.searchPath = searchPath
    }
}

extension DatabaseConfiguration: CustomStringConvertible {
    /// Leaves the URL out: it may carry a password.
    public var description: String {
        var parts = ["applicationName: \(applicationName)", "connectTimeout: \(connectTimeout)"]
        if let searchPath { parts.append("searchPath: \(searchPath)") }
        if let statementTimeout { parts.append("statementTimeout: \(statementTimeout)") }
        if let lockTimeout { parts.append("lockTimeout: \(lockTimeout)") }
        return "DatabaseConfiguration(\(parts.joined(separator: ", ")))"
    }
}

extension Duration {
    /// Whole seconds, rounded up; at least 1 unless the duration is zero or negative (then 0).
    var wholeSecondsRoundedUp: Int64 {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        return attoseconds > 0 ? seconds + 1 : seconds
    }

    /// Whole milliseconds, rounded up; 0 for zero or negative durations.
    var wholeMillisecondsRoundedUp: Int64 {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        let perMillisecond: Int64 = 1_000_000_000_000_000
        let (millis, remainder) = attoseconds.quotientAndRemainder(dividingBy: perMillisecond)
        return seconds * 1000 + millis + (remainder > 0 ? 1 : 0)
    }
}
