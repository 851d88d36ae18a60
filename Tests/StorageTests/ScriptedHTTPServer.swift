import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A one-thread HTTP/1.1 responder on 127.0.0.1 for the transport paths a real S3 server will not produce on
/// demand (redirects, 503, a server that never answers). It answers each connection with the next scripted
/// response (`nil`: read the request, then stay silent until `stop()`), and records the raw requests.
///
/// `@unchecked Sendable`: `requests` and `stopped` are only touched under `lock`; the socket is owned by the
/// accept thread.
final class ScriptedHTTPServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var recorded: [String] = []
    private var stopped = false
    private var responses: [String?]

    init(responses: [String?]) throws {
        self.responses = responses
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard listening else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in serve() }
    }

    /// The raw requests received so far (request line and headers, lower-cased names kept as sent).
    var requests: [String] { lock.withLock { recorded } }

    func stop() {
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func serve() {
        var held: [Int32] = []
        defer {
            for connection in held { close(connection) }
            close(listener)
        }
        while !lock.withLock({ stopped }) {
            let connection = accept(listener, nil, nil)
            if connection < 0 { return }
            let request = readRequest(connection)
            let response: String?? = lock.withLock {
                recorded.append(request)
                return responses.isEmpty ? .some(nil) : responses.removeFirst()
            }
            if let text = response ?? nil {
                _ = Array(text.utf8).withUnsafeBytes { send(connection, $0.baseAddress, $0.count, 0) }
                close(connection)
            } else {
                held.append(connection)  // silent: keep it open so the client waits for its timeout
            }
        }
    }

    /// Reads the request head and a Content-Length body; returns the head.
    private func readRequest(_ connection: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headEnd: Int?
        var expected = Int.max
        while bytes.count < expected {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            bytes += buffer[0..<count]
            if headEnd == nil, let end = Self.find([13, 10, 13, 10], in: bytes) {
                headEnd = end
                let head = String(decoding: bytes[0..<end], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                expected = end + 4 + (length ?? 0)
            }
        }
        return String(decoding: bytes[0..<(headEnd ?? bytes.count)], as: UTF8.self)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where Array(haystack[start..<start + needle.count]) == needle {
            return start
        }
        return nil
    }
}

extension ScriptedHTTPServer {
    static func response(_ status: Int, _ reason: String, headers: [String] = [], body: String = "") -> String {
        ([("HTTP/1.1 \(status) \(reason)")] + headers + ["Content-Length: \(body.utf8.count)", "Connection: close"])
            .joined(separator: "\r\n") + "\r\n\r\n" + body
    }
}
