import Foundation

/// Where and how to reach an S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, Supabase Storage's S3
/// endpoint, SeaweedFS).
///
/// `description` never shows the secret key or the session token.
public struct S3Configuration: Sendable, CustomStringConvertible {
    /// The service endpoint, e.g. `https://s3.eu-west-1.amazonaws.com`, `http://127.0.0.1:9000`,
    /// `https://<account>.r2.cloudflarestorage.com` or `https://<project>.supabase.co/storage/v1/s3`
    /// (a path prefix is kept).
    public var endpoint: URL
    /// The signing region (`us-east-1` for MinIO/SeaweedFS, `auto` for R2, the project region for Supabase).
    public var region: String
    public var bucket: String
    public var accessKeyID: String
    public var secretAccessKey: String
    /// For temporary credentials (sent as `x-amz-security-token`).
    public var sessionToken: String?
    /// `true`: `endpoint/bucket/key` (works everywhere); `false`: `bucket.endpoint-host/key` (virtual-hosted).
    public var pathStyle: Bool
    /// Base of the URLs `publicURL(for:)` returns (a CDN or the bucket's public URL), if any.
    public var publicBaseURL: String?
    /// Deadline of one HTTP request, from the call: waiting for a pooled connection, connecting, sending and
    /// reading the whole answer included.
    public var requestTimeout: Duration
    /// Keep-alive HTTP/1.1 connections the store holds open to its endpoint; more requests at once wait for one
    /// (within their deadline). The worker has at most `worker.jobs-in-flight` requests under way per store.
    public var maxConnectionsPerHost: Int

    public init(
        endpoint: URL,
        region: String,
        bucket: String,
        accessKeyID: String,
        secretAccessKey: String,
        sessionToken: String? = nil,
        pathStyle: Bool = true,
        publicBaseURL: String? = nil,
        requestTimeout: Duration = .seconds(10),
        maxConnectionsPerHost: Int = 32
    ) {
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.pathStyle = pathStyle
        self.publicBaseURL = publicBaseURL
        self.requestTimeout = requestTimeout
        self.maxConnectionsPerHost = maxConnectionsPerHost
    }

    public var description: String {
        "S3Configuration(endpoint: \(endpoint.absoluteString), region: \(region), pathStyle: \(pathStyle), "
            + "credentials: <redacted>)"
    }
}
