import Foundation
import Logging
import Storage
import TestEnvironment

#if canImport(Glibc)
    import Glibc
#endif

/// The S3 service for the integration suites (`.requires(.s3)`: `TestService.s3Settings()`, from
/// AVATAR_TEST_S3_*, see scripts/services.sh) as a `S3Configuration`.
enum S3TestEnvironment {
    /// The service's configuration; when it is missing (and required), records an issue and throws.
    static func require() throws -> S3Configuration {
        let settings = try TestService.s3Settings()
        guard let endpoint = URL(string: settings.endpoint) else {
            throw MissingService(service: "a URL in AVATAR_TEST_S3_ENDPOINT")
        }
        return S3Configuration(
            endpoint: endpoint, region: settings.region, bucket: settings.bucket, accessKeyID: settings.accessKey,
            secretAccessKey: settings.secretKey, publicBaseURL: "https://cdn.example.test/media")
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
