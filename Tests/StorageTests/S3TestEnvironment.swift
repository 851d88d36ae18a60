import Foundation
import Logging
import Storage

#if canImport(Glibc)
    import Glibc
#endif

/// The S3 service for integration tests, found only through AVATAR_TEST_S3_* (see scripts/services.sh).
/// Without them the integration suites are disabled, unless AVATAR_REQUIRE_SERVICES=1, in which case they run
/// and fail on `require()`.
enum S3TestEnvironment {
    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "AVATAR_REQUIRE_SERVICES=1 but AVATAR_TEST_S3_ENDPOINT/REGION/BUCKET/ACCESS_KEY/SECRET_KEY are not all set"
        }
    }

    static let configuration: S3Configuration? = {
        let environment = ProcessInfo.processInfo.environment
        guard let endpoint = environment["AVATAR_TEST_S3_ENDPOINT"].flatMap({ URL(string: $0) }),
            let region = environment["AVATAR_TEST_S3_REGION"],
            let bucket = environment["AVATAR_TEST_S3_BUCKET"],
            let accessKey = environment["AVATAR_TEST_S3_ACCESS_KEY"],
            let secretKey = environment["AVATAR_TEST_S3_SECRET_KEY"]
        else { return nil }
        return S3Configuration(
            endpoint: endpoint, region: region, bucket: bucket, accessKeyID: accessKey, secretAccessKey: secretKey,
            publicBaseURL: "https://cdn.example.test/media")
    }()

    static let enabled =
        configuration != nil || ProcessInfo.processInfo.environment["AVATAR_REQUIRE_SERVICES"] == "1"

    static func require() throws -> S3Configuration {
        guard let configuration else { throw Missing() }
        return configuration
    }

    static func store(_ configuration: S3Configuration) throws -> S3Store {
        try S3Store.validate(configuration)
        var logger = Logger(label: "storage-tests")
        logger.logLevel = .debug
        return S3Store(configuration: configuration, logger: logger)
    }

    /// A key prefix no other test (or test run) uses.
    static func uniquePrefix(_ test: String) -> String {
        "storage-tests/\(test)-\(UUID().uuidString.lowercased())"
    }

    /// A 127.0.0.1 TCP port with no listener: bound to port 0, read back, closed.
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
