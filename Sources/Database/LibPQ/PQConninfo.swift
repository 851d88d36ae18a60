import Clibpq
import Foundation

/// A conninfo string or `postgresql://` URL read with libpq's own parser (`PQconninfoParse`), so that what is
/// checked is what `PQconnectdb` would use.
enum PQConninfo {
    /// The options the string sets (keyword → value), or nil when libpq cannot parse it. libpq's message is
    /// dropped: it quotes the string, which may hold a password.
    static func parse(_ conninfo: String) -> [String: String]? {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &error) else {
            if let error { PQfreemem(error) }
            return nil
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return values
    }
}

extension DatabaseConfiguration {
    /// The TLS modes that verify the server's certificate against a root certificate.
    static let verifyingModes: Set<String> = ["verify-ca", "verify-full"]

    /// What keeps libpq from connecting with this URL before it tries: the URL does not parse, or it asks to
    /// verify the server's certificate (`sslmode=verify-ca|verify-full`) without naming the root certificate
    /// (`sslrootcert`, or `PGSSLROOTCERT`), so libpq would look for `~/.postgresql/root.crt`, which a
    /// container does not have. Nil when nothing is wrong. Never quotes the URL.
    public func connectionProblem(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        fileExists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }
    ) -> String? {
        guard let options = PQConninfo.parse(url) else {
            return "database.url is not a libpq connection string or postgresql:// URL"
        }
        let mode = options["sslmode"] ?? environment["PGSSLMODE"] ?? "prefer"
        guard Self.verifyingModes.contains(mode) else { return nil }
        if let root = options["sslrootcert"] ?? environment["PGSSLROOTCERT"], !root.isEmpty {
            return fileExists(root) ? nil : "database.url: sslrootcert names \(root), which does not exist"
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        let fallback = home + "/.postgresql/root.crt"
        return fileExists(fallback)
            ? nil
            : "database.url: sslmode=\(mode) without sslrootcert: libpq would read \(fallback), which does not exist "
                + "(set sslrootcert to the CA bundle, e.g. /etc/ssl/certs/ca-certificates.crt, or the provider's)"
    }
}

extension DatabaseConfiguration {
    /// libpq `options` carrying `startupSettings` as `-c name=value`, after the URL's own `options` (or
    /// `PGOPTIONS`, which libpq would otherwise use), so both apply; nil without startup settings.
    func startupOptions(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard !startupSettings.isEmpty else { return nil }
        let own = PQConninfo.parse(url)?["options"] ?? environment["PGOPTIONS"]
        let settings = startupSettings.sorted { $0.key < $1.key }.map { "-c \($0.key)=\($0.value)" }
        return ([own].compactMap { $0 }.filter { !$0.isEmpty } + settings).joined(separator: " ")
    }
}
