import Foundation

/// A signed request, ready for `S3HTTPClient`: exactly these headers (`host` included) are sent.
struct SignedRequest: Sendable {
    var method: String
    var url: String
    /// Names lower-cased, in signing order, then `authorization`.
    var headers: [(name: String, value: String)]
    var body: [UInt8]?

    /// The value of header `name` (any case), or `nil`.
    func header(_ name: String) -> String? {
        headers.first { $0.name == name.lowercased() }?.value
    }
}

/// Turns (method, key, body) into a `SignedRequest`. The URL's path and the canonical URI come from the
/// same encoded string, so what is signed is exactly what is sent.
struct S3RequestBuilder: Sendable {
    let scheme: String
    /// Host as sent in the `Host` header: lower-cased, with `:port` only when it is not the scheme's default.
    let hostHeader: String
    let host: String
    let port: Int?
    /// Encoded path up to and including the bucket (path style) or the endpoint's own prefix (virtual host),
    /// without a trailing slash; "" when empty.
    let basePath: String
    let signer: SigV4Signer
    let sessionToken: String?
    let bucket: String

    init(configuration: S3Configuration) throws(StorageError) {
        guard let components = URLComponents(url: configuration.endpoint, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let endpointHost = components.host, !endpointHost.isEmpty
        else { throw .invalidConfiguration("endpoint must be an http(s) URL with a host") }
        if components.query != nil || components.fragment != nil {
            throw .invalidConfiguration("endpoint must not have a query or fragment")
        }
        let bucket = configuration.bucket
        guard !bucket.isEmpty, !bucket.contains("/"), ObjectKey.isValid(bucket) else {
            throw .invalidConfiguration("bucket name is empty or contains /")
        }
        guard !configuration.accessKeyID.isEmpty, !configuration.secretAccessKey.isEmpty else {
            throw .invalidConfiguration("access key id and secret access key are required")
        }
        guard !configuration.region.isEmpty else { throw .invalidConfiguration("region is required") }

        var prefix = components.percentEncodedPath
        while prefix.hasSuffix("/") { prefix.removeLast() }
        if !prefix.isEmpty && !prefix.hasPrefix("/") { prefix = "/" + prefix }

        let host: String
        if configuration.pathStyle {
            host = endpointHost.lowercased()
            basePath = prefix + "/" + URIEncoding.encode(bucket)
        } else {
            host = bucket.lowercased() + "." + endpointHost.lowercased()
            basePath = prefix
        }
        self.scheme = scheme
        self.host = host
        self.port = components.port
        let defaultPort = scheme == "https" ? 443 : 80
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        if let port = components.port, port != defaultPort {
            hostHeader = "\(bracketed):\(port)"
        } else {
            hostHeader = bracketed
        }
        signer = SigV4Signer(
            accessKeyID: configuration.accessKeyID, secretAccessKey: configuration.secretAccessKey,
            region: configuration.region, service: "s3")
        sessionToken = configuration.sessionToken
        self.bucket = bucket
    }

    /// The `x-amz-copy-source` value for `key` in this bucket: "/bucket/key", percent-encoded like a path.
    func copySource(for key: String) -> String {
        "/" + URIEncoding.encode(bucket) + "/" + URIEncoding.encodePath(key)
    }

    /// The encoded request path for `key` (`nil`: the bucket itself, with a trailing slash).
    func path(for key: String?) -> String {
        guard let key else { return basePath + "/" }
        return basePath + "/" + URIEncoding.encodePath(key)
    }

    /// The full request URL for `key`, with `query` encoded exactly as the canonical query.
    func url(for key: String?, query: [(name: String, value: String)] = []) -> URL? {
        var components = URLComponents()
        components.scheme = scheme
        components.host = host.contains(":") ? "[\(host)]" : host
        components.port = port
        components.percentEncodedPath = path(for: key)
        if !query.isEmpty { components.percentEncodedQuery = SigV4Signer.canonicalQuery(query) }
        return components.url
    }

    /// A signed request. `extraHeaders` (e.g. content-type, cache-control) are sent and signed.
    func request(
        method: String, key: String?, query: [(name: String, value: String)] = [], body: [UInt8]?,
        extraHeaders: [(name: String, value: String)] = [], date: Date = Date()
    ) throws(StorageError) -> SignedRequest {
        guard let url = url(for: key, query: query) else {
            throw StorageError(code: .invalidKey, detail: "key does not form a valid URL")
        }
        let payloadHash = body.map { Hex.sha256($0) } ?? SigV4Signer.emptyPayloadHash
        let amzDate = SigV4Signer.amzDate(date)
        var headers: [(name: String, value: String)] = [
            ("host", hostHeader), ("x-amz-date", amzDate), ("x-amz-content-sha256", payloadHash),
        ]
        if let sessionToken { headers.append(("x-amz-security-token", sessionToken)) }
        headers += extraHeaders.map { (name: $0.name.lowercased(), value: $0.value) }

        let signature = signer.sign(
            SigV4Signer.Request(method: method, canonicalURI: path(for: key), query: query, headers: headers),
            payloadHash: payloadHash, amzDate: amzDate)

        headers.append(("authorization", signature.authorization))
        return SignedRequest(method: method, url: url.absoluteString, headers: headers, body: body)
    }
}
