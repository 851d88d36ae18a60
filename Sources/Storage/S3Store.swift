import Foundation
import Logging
import Synchronization

/// An `ObjectStore` on an S3-compatible bucket: SigV4 header authentication with a signed payload hash,
/// `PUT` (with Content-Type and Cache-Control), `GET`, `HEAD`, `DELETE`. Works against AWS S3, MinIO, R2,
/// Supabase Storage's S3 endpoint and SeaweedFS.
///
/// Every call is one HTTP request on the store's own connection pool (`S3HTTPClient`, over async-http-client), with
/// the configuration's `requestTimeout` as its deadline; the calling thread waits for it, so call it from Dispatch
/// worker threads, never from Swift's cooperative pool or a NIO event loop. Retries are the caller's choice (the
/// worker's `RetryPolicy`). The owner calls `shutdown()` once nothing uses the store any more.
///
/// Status mapping: 404 → `.notFound`; 401/403 → `.accessDenied`; 408, 429, 5xx and S3's `RequestTimeout` /
/// `SlowDown` → `.unavailable` (transient); other 3xx/4xx → `.rejected`. Network failures → `.unavailable`
/// (transient, except TLS certificate and URL errors).
public final class S3Store: ObjectStore {
    private let builder: Result<S3RequestBuilder, StorageError>
    private let client: S3HTTPClient
    private let publicBaseURL: String?
    private let logger: Logger
    public let writeDeadline: Duration
    /// How far from S3's clock a request's signing time (`x-amz-date`) may be: S3 refuses it otherwise
    /// (`RequestTimeTooSkewed`; AWS documents 15 minutes, SeaweedFS checks the same).
    public static let signatureLifetime = Duration.seconds(15 * 60)
    public var lateWriteHorizon: Duration { Self.signatureLifetime + writeDeadline }
    /// The bucket's versioning, once asked (`versioning()`).
    let knownVersioning = Mutex<BucketVersioning?>(nil)

    /// Creates the store; no request is made (use `ping()` to check reachability). An unusable configuration
    /// (non-http(s) endpoint, empty bucket, region or credentials) makes every call, `ping()` included, throw
    /// `.invalidConfiguration`; `validate(_:)` reports it up front.
    public init(configuration: S3Configuration, logger: Logger) {
        builder = Result { () throws(StorageError) in try S3RequestBuilder(configuration: configuration) }
        client = S3HTTPClient(
            timeout: configuration.requestTimeout, maxConnectionsPerHost: configuration.maxConnectionsPerHost)
        publicBaseURL = configuration.publicBaseURL
        writeDeadline = configuration.requestTimeout
        self.logger = logger
    }

    /// Throws `.invalidConfiguration` when `configuration` cannot be used (see `init`).
    public static func validate(_ configuration: S3Configuration) throws(StorageError) {
        _ = try S3RequestBuilder(configuration: configuration)
    }

    public func get(_ key: String) throws(StorageError) -> StoredObject {
        try ObjectKey.validate(key)
        let response = try perform(.get, method: "GET", key: key)
        guard response.status == 200 else { throw Self.error(for: response, operation: .get) }
        return StoredObject(
            data: response.body, contentType: response.headers["content-type"],
            cacheControl: response.headers["cache-control"])
    }

    /// `HEAD` first: a `Content-Length` over the cap is `.tooLarge` without a `GET`. The `GET` itself asks
    /// for at most one byte more than the cap (`Range`), and its body is counted as it streams in: once more
    /// than `maxBytes` arrived (an object that grew, a lying length, a store that ignores ranges), reading
    /// stops and the answer is `.tooLarge`.
    ///
    /// An empty object is returned from its `HEAD` alone: S3 answers a range request on it with
    /// 416 InvalidRange, which is no outage (the empty bytes then fail as an image, permanently).
    public func get(_ key: String, maxBytes: Int) throws(StorageError) -> StoredObject {
        guard let headers = try head(key) else { throw StorageError(code: .notFound, operation: .get) }
        let length = headers["content-length"].flatMap(Int.init)
        if let length, length > maxBytes {
            throw StorageError(code: .tooLarge, operation: .get, detail: "\(length) bytes > \(maxBytes)")
        }
        let empty = StoredObject(data: [], contentType: headers["content-type"], cacheControl: headers["cache-control"])
        if length == 0 { return empty }
        try ObjectKey.validate(key)
        let response = try perform(
            .get, method: "GET", key: key, headers: [("range", "bytes=0-\(maxBytes)")], maxBodyBytes: maxBytes)
        // The object was emptied between HEAD and GET.
        if response.status == 416 { return empty }
        // 206 for the range; 200 from a store that ignores ranges (the body is still checked).
        guard response.status == 200 || response.status == 206 else {
            throw Self.error(for: response, operation: .get)
        }
        guard !response.bodyOverLimit else {
            throw StorageError(code: .tooLarge, operation: .get, detail: "body over \(maxBytes) bytes")
        }
        return StoredObject(
            data: response.body, contentType: response.headers["content-type"],
            cacheControl: response.headers["cache-control"])
    }

    public func put(_ key: String, data: [UInt8], options: PutOptions) throws(StorageError) {
        try ObjectKey.validate(key)
        var headers: [(name: String, value: String)] = [("content-type", options.contentType)]
        if let cacheControl = options.cacheControl { headers.append(("cache-control", cacheControl)) }
        let response = try perform(
            .put, method: "PUT", key: key, body: data, headers: headers, date: options.decidedAt ?? Date())
        guard (200..<300).contains(response.status) else { throw Self.error(for: response, operation: .put) }
    }

    /// `PUT` with `x-amz-copy-source` (CopyObject), replacing the metadata with `options`. S3 may answer 200 with
    /// an error body when the copy fails late; that is an error too.
    public func copy(from source: String, to destination: String, options: PutOptions) throws(StorageError) {
        try ObjectKey.validate(source)
        try ObjectKey.validate(destination)
        let copySource: String
        do { copySource = try builder.get().copySource(for: source) } catch { throw error.with(operation: .put) }
        var headers: [(name: String, value: String)] = [
            ("content-type", options.contentType), ("x-amz-copy-source", copySource),
            ("x-amz-metadata-directive", "REPLACE"),
        ]
        if let cacheControl = options.cacheControl { headers.append(("cache-control", cacheControl)) }
        let response = try perform(
            .put, method: "PUT", key: destination, headers: headers, date: options.decidedAt ?? Date())
        guard (200..<300).contains(response.status) else { throw Self.error(for: response, operation: .put) }
        if let body = S3ErrorBody(response.body) {
            throw StorageError(
                code: .unavailable, isTransient: true, httpStatus: response.status, operation: .put,
                detail: "\(body.code): \(body.message)")
        }
    }

    /// `HEAD` on the object. Note that AWS answers 403 (→ `.accessDenied`), not 404, for a missing key when
    /// the credentials lack `s3:ListBucket`.
    public func exists(_ key: String) throws(StorageError) -> Bool {
        try ObjectKey.validate(key)
        let response = try perform(.exists, method: "HEAD", key: key)
        switch response.status {
        case 200: return true
        case 404: return false
        default: throw Self.error(for: response, operation: .exists)
        }
    }

    public func delete(_ key: String) throws(StorageError) {
        try ObjectKey.validate(key)
        let response = try perform(.delete, method: "DELETE", key: key)
        if (200..<300).contains(response.status) { return }
        // Some S3 implementations answer 404 NoSuchKey where AWS answers 204; both mean "gone".
        if response.status == 404, S3ErrorBody(response.body)?.code ?? "NoSuchKey" == "NoSuchKey" { return }
        throw Self.error(for: response, operation: .delete)
    }

    /// ListObjectsV2 with `prefix`, following `NextContinuationToken` until the listing is complete.
    public func keys(withPrefix prefix: String) throws(StorageError) -> [String] {
        try keys(withPrefix: prefix, pageSize: nil)
    }

    /// `pageSize`: S3's `max-keys` (default 1000); small pages let the tests walk several.
    func keys(withPrefix prefix: String, pageSize: Int?) throws(StorageError) -> [String] {
        try ObjectKey.validatePrefix(prefix)
        var keys: [String] = []
        var token: String?
        repeat {
            var query: [(name: String, value: String)] = [("list-type", "2"), ("prefix", prefix)]
            if let pageSize { query.append(("max-keys", "\(pageSize)")) }
            if let token { query.append(("continuation-token", token)) }
            let response = try perform(.get, method: "GET", key: nil, query: query)
            guard response.status == 200 else { throw Self.error(for: response, operation: .get) }
            let text = String(decoding: response.body, as: UTF8.self)
            keys += XMLText.elements("Key", in: text)
            token =
                XMLText.elements("IsTruncated", in: text).first == "true"
                ? XMLText.elements("NextContinuationToken", in: text).first : nil
        } while token != nil
        return keys
    }

    /// `HEAD` on the bucket: succeeds when the endpoint answers, the credentials are accepted and the bucket
    /// exists.
    public func ping() throws(StorageError) {
        let response = try perform(.ping, method: "HEAD", key: nil)
        guard response.status == 200 else { throw Self.error(for: response, operation: .ping) }
    }

    /// Closes the store's pooled connections once the requests under way are done; calls after it fail with
    /// `.unavailable` (permanent). Idempotent.
    public func shutdown() async {
        await client.shutdown()
    }

    public func publicURL(for key: String) -> String? {
        joinPublicURL(base: publicBaseURL, key: key)
    }

    /// `HEAD` of an object: its response headers (lower-cased names), or `nil` when it does not exist.
    func head(_ key: String) throws(StorageError) -> [String: String]? {
        try ObjectKey.validate(key)
        let response = try perform(.exists, method: "HEAD", key: key)
        switch response.status {
        case 200: return response.headers
        case 404: return nil
        default: throw Self.error(for: response, operation: .exists)
        }
    }

    /// The keys under `prefix` as the server names them (ListObjectsV2, first 1000 only). For tests and tools:
    /// it shows the server stored exactly the key that was given, not some encoding of it.
    func listKeys(prefix: String) throws(StorageError) -> [String] {
        let response = try perform(
            .get, method: "GET", key: nil, query: [("list-type", "2"), ("prefix", prefix)])
        guard response.status == 200 else { throw Self.error(for: response, operation: .get) }
        return XMLText.elements("Key", in: String(decoding: response.body, as: UTF8.self))
    }

    // MARK: - Request plumbing

    func perform(
        _ operation: StorageError.Operation, method: String, key: String?,
        query: [(name: String, value: String)] = [], body: [UInt8]? = nil,
        headers: [(name: String, value: String)] = [], maxBodyBytes: Int = .max, date: Date = Date()
    ) throws(StorageError) -> HTTPResponse {
        let request: SignedRequest
        do {
            request = try builder.get().request(
                method: method, key: key, query: query, body: body, extraHeaders: headers, date: date)
        } catch {
            throw error.with(operation: operation)
        }
        let started = ContinuousClock.now
        let result = client.send(request, maxBodyBytes: maxBodyBytes)
        let elapsed = ContinuousClock.now - started
        switch result {
        case .success(let response):
            logger.debug(
                "s3 request",
                metadata: [
                    "storage.operation": "\(operation.rawValue)", "http.status": "\(response.status)",
                    "storage.elapsed_ms": "\(Self.milliseconds(elapsed))",
                ])
            return response
        case .failure(let failure):
            logger.debug(
                "s3 request failed",
                metadata: [
                    "storage.operation": "\(operation.rawValue)", "storage.transient": "\(failure.isTransient)",
                    "storage.elapsed_ms": "\(Self.milliseconds(elapsed))",
                ])
            throw StorageError(
                code: .unavailable, isTransient: failure.isTransient, operation: operation, detail: failure.detail)
        }
    }

    private static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.1f", duration.timeInterval * 1000)
    }

    /// Classifies a non-success response.
    static func error(for response: HTTPResponse, operation: StorageError.Operation) -> StorageError {
        let body = S3ErrorBody(response.body)
        let detail = body.map { "\($0.code): \($0.message)" }
        let status = response.status
        let code: StorageError.Code
        var transient = false
        switch status {
        case 404:
            code = .notFound
        case 401, 403:
            code = .accessDenied
        case 408, 429, 500...599:
            code = .unavailable
            transient = true
        default:
            if let s3Code = body?.code, ["RequestTimeout", "SlowDown", "InternalError"].contains(s3Code) {
                code = .unavailable
                transient = true
            } else {
                code = .rejected
            }
        }
        return StorageError(
            code: code, isTransient: transient, httpStatus: status, operation: operation, detail: detail)
    }
}

/// The `<Code>` and `<Message>` of an S3 XML error body. The other elements (`<Key>`, `<BucketName>`,
/// `<Resource>`) are deliberately not read: they would put user data into error details.
struct S3ErrorBody {
    /// Longer bodies are not S3 error documents; `S3HTTPClient` reads no more of an error answer than this.
    static let maxBytes = 64 * 1024

    var code: String
    var message: String

    init?(_ body: [UInt8]) {
        guard !body.isEmpty, body.count < Self.maxBytes else { return nil }
        let text = String(decoding: body, as: UTF8.self)
        guard let code = XMLText.elements("Code", in: text).first else { return nil }
        self.code = String(code.prefix(100))
        self.message = String((XMLText.elements("Message", in: text).first ?? "").prefix(200))
    }
}

/// Just enough XML for S3's flat answers: the text of every `<name>` element, entities decoded.
enum XMLText {
    static func elements(_ name: String, in text: String) -> [String] {
        var values: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "<\(name)>"),
            let close = rest.range(of: "</\(name)>", range: open.upperBound..<rest.endIndex)
        {
            values.append(decodeEntities(String(rest[open.upperBound..<close.lowerBound])))
            rest = rest[close.upperBound...]
        }
        return values
    }

    static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            rest = rest[amp...]
            guard let semi = rest.firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semi]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                if entity.hasPrefix("#x"), let value = UInt32(entity.dropFirst(2), radix: 16),
                    let scalar = Unicode.Scalar(value)
                {
                    out.unicodeScalars.append(scalar)
                } else if entity.hasPrefix("#"), let value = UInt32(entity.dropFirst()),
                    let scalar = Unicode.Scalar(value)
                {
                    out.unicodeScalars.append(scalar)
                } else {
                    out += rest[amp...semi]
                }
            }
            rest = rest[rest.index(after: semi)...]
        }
        return out + rest
    }
}
