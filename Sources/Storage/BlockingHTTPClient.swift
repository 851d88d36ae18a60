import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The parts of an HTTP response the S3 backend needs.
struct HTTPResponse: Sendable {
    var status: Int
    /// Header values by lower-cased name.
    var headers: [String: String]
    var body: [UInt8]
}

/// A transport failure (no HTTP response), already classified.
struct TransportFailure: Error, Sendable {
    var isTransient: Bool
    var detail: String
}

/// Synchronous HTTP over a dedicated `URLSession`.
///
/// `send` blocks the calling thread on a semaphore until the transfer completes; the session's own delegate
/// queue runs the completion handler, so this never needs the calling thread to make progress. It is meant
/// for Dispatch worker threads (the worker's render pool); calling it from Swift's cooperative pool would
/// block one of its few threads for the whole request.
///
/// The session is ephemeral (no cache, no cookies, no credential storage) and never follows redirects: a
/// signed request must not be replayed elsewhere, and S3 3xx answers are errors for us.
final class BlockingHTTPClient: Sendable {
    private let session: URLSession
    private let timeout: Duration

    init(timeout: Duration) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        configuration.timeoutIntervalForRequest = timeout.timeInterval
        configuration.timeoutIntervalForResource = timeout.timeInterval
        self.timeout = timeout
        self.session = URLSession(
            configuration: configuration, delegate: RedirectRefusingDelegate(), delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    func send(_ request: URLRequest) -> Result<HTTPResponse, TransportFailure> {
        let box = CompletionBox()
        let semaphore = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { data, response, error in
            box.store(data: data, response: response, error: error)
            semaphore.signal()
        }
        task.resume()
        // URLSession enforces `timeout`; this watchdog only guards against a transfer that never completes.
        if semaphore.wait(timeout: .now() + (timeout + .seconds(5)).timeInterval) == .timedOut {
            task.cancel()
            semaphore.wait()
        }
        return box.result()
    }
}

/// Carries the completion handler's values to the blocked caller.
///
/// `@unchecked Sendable`: `store` runs exactly once, on the session's delegate queue, before the semaphore is
/// signalled; `result` runs only after the caller's `wait()` returned. The semaphore orders the two, so the
/// fields are never accessed concurrently.
private final class CompletionBox: @unchecked Sendable {
    private var data: Data?
    private var response: URLResponse?
    private var error: (any Error)?

    func store(data: Data?, response: URLResponse?, error: (any Error)?) {
        self.data = data
        self.response = response
        self.error = error
    }

    func result() -> Result<HTTPResponse, TransportFailure> {
        if let error { return .failure(classify(error)) }
        guard let http = response as? HTTPURLResponse else {
            return .failure(TransportFailure(isTransient: true, detail: "no HTTP response"))
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            headers[name.lowercased()] = value
        }
        return .success(HTTPResponse(status: http.statusCode, headers: headers, body: [UInt8](data ?? Data())))
    }

    private func classify(_ error: any Error) -> TransportFailure {
        guard let urlError = error as? URLError else {
            return TransportFailure(isTransient: true, detail: "transport error \(type(of: error))")
        }
        let detail = "URLError \(urlError.code.rawValue)"
        switch urlError.code {
        case .badURL, .unsupportedURL, .userAuthenticationRequired,
            .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
            .serverCertificateNotYetValid, .clientCertificateRejected, .clientCertificateRequired:
            // Configuration problems: retrying the same request cannot help.
            return TransportFailure(isTransient: false, detail: detail)
        default:
            // cannotConnectToHost, timedOut, networkConnectionLost, cannotFindHost, dnsLookupFailed,
            // notConnectedToInternet, badServerResponse, cancelled (our watchdog), ...
            return TransportFailure(isTransient: true, detail: detail)
        }
    }
}

/// Refuses every redirect so the 3xx response itself is delivered.
private final class RedirectRefusingDelegate: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
