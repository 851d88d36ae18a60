import Foundation
import Logging

/// Builds a store from one URL-shaped setting, for the CLI and config files:
///
/// - `file:///var/lib/avatars` (optionally `?publicBaseURL=...`): `LocalDirectoryStore`.
/// - `s3://BUCKET?endpoint=https://host[:port][/prefix]&region=us-east-1&pathStyle=true&publicBaseURL=...`
///   `&timeout=10`: `S3Store`. Without `endpoint`, AWS's regional endpoint `https://s3.REGION.amazonaws.com`
///   is used; without `region`, `us-east-1`. Credentials never go in the URL: they come from the
///   `credentials` argument, else from the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
///   `AWS_SESSION_TOKEN`).
public enum ObjectStoreFactory {
    public struct Credentials: Sendable {
        public var accessKeyID: String
        public var secretAccessKey: String
        public var sessionToken: String?

        public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
        }
    }

    public static func make(
        url: String,
        credentials: Credentials? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger
    ) throws(StorageError) -> any ObjectStore {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            throw .invalidConfiguration("storage URL is not a URL")
        }
        if components.user != nil || components.password != nil {
            throw .invalidConfiguration("storage URL must not contain credentials")
        }
        var options: [String: String] = [:]
        for item in components.queryItems ?? [] { options[item.name] = item.value ?? "" }

        switch scheme {
        case "file":
            guard components.host == nil || components.host == "" || components.host == "localhost",
                !components.path.isEmpty
            else { throw .invalidConfiguration("file URL must be file:///absolute/path") }
            return try LocalDirectoryStore(
                root: URL(fileURLWithPath: components.path, isDirectory: true),
                publicBaseURL: options["publicBaseURL"])
        case "s3":
            let configuration = try s3Configuration(
                components: components, options: options, credentials: credentials, environment: environment)
            try S3Store.validate(configuration)
            return S3Store(configuration: configuration, logger: logger)
        default:
            throw .invalidConfiguration("storage URL scheme must be file or s3")
        }
    }

    static func s3Configuration(
        components: URLComponents, options: [String: String], credentials: Credentials?,
        environment: [String: String]
    ) throws(StorageError) -> S3Configuration {
        guard let bucket = components.host, !bucket.isEmpty else {
            throw .invalidConfiguration("s3 URL must name the bucket: s3://bucket")
        }
        let region = options["region"].flatMap { $0.isEmpty ? nil : $0 } ?? "us-east-1"
        let endpointText = options["endpoint"] ?? "https://s3.\(region).amazonaws.com"
        guard let endpoint = URL(string: endpointText) else { throw .invalidConfiguration("endpoint is not a URL") }
        let resolved =
            credentials
            ?? environment["AWS_ACCESS_KEY_ID"].flatMap { id in
                environment["AWS_SECRET_ACCESS_KEY"].map { secret in
                    Credentials(
                        accessKeyID: id, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"])
                }
            }
        guard let resolved else {
            throw .invalidConfiguration("no S3 credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)")
        }
        var pathStyle = true
        if let value = options["pathStyle"] {
            guard let flag = Bool(value.lowercased()) else { throw .invalidConfiguration("pathStyle is not a bool") }
            pathStyle = flag
        }
        var timeout = Duration.seconds(10)
        if let value = options["timeout"] {
            guard let seconds = Double(value), seconds > 0 else {
                throw .invalidConfiguration("timeout must be a positive number of seconds")
            }
            timeout = .milliseconds(Int64(seconds * 1000))
        }
        return S3Configuration(
            endpoint: endpoint, region: region, bucket: bucket, accessKeyID: resolved.accessKeyID,
            secretAccessKey: resolved.secretAccessKey,
            sessionToken: resolved.sessionToken.flatMap { $0.isEmpty ? nil : $0 }, pathStyle: pathStyle,
            publicBaseURL: options["publicBaseURL"], requestTimeout: timeout)
    }
}
