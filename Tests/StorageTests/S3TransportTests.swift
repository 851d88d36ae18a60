import Foundation
import Logging
import Testing

@testable import Storage

/// S3Store's transport against a scripted local HTTP responder, for answers SeaweedFS does not give on demand.
@Suite struct S3TransportTests {
    static func configuration(port: Int, timeout: Duration = .seconds(5)) -> S3Configuration {
        S3Configuration(
            endpoint: URL(string: "http://127.0.0.1:\(port)")!, region: "us-east-1", bucket: "avatars",
            accessKeyID: "AKID", secretAccessKey: "SECRET", requestTimeout: timeout)
    }

    static func store(port: Int, timeout: Duration = .seconds(5)) -> S3Store {
        S3Store(configuration: configuration(port: port, timeout: timeout), logger: Logger(label: "storage-tests"))
    }

    /// async-http-client takes the process's tracer when its configuration is made, and would export a root span per
    /// request with the key in `url.path` (docs/ARCHITECTURE.md §3); the store's client has none. (Without a tracer
    /// installed, the process's is swift-distributed-tracing's no-op one, which async-http-client would keep too.)
    @Test func theClientStartsNoSpans() async {
        let client = S3HTTPClient(timeout: .seconds(1), maxConnectionsPerHost: 1)
        #expect(!client.startsSpans)
        await client.shutdown()
    }

    @Test func whatIsSignedIsWhatIsSent() throws {
        let server = try ScriptedHTTPServer(responses: [ScriptedHTTPServer.response(200, "OK")])
        defer { server.stop() }
        let store = Self.store(port: server.port)
        try store.put(
            "users/Zoë Ü/a b+.png", data: Array("hello".utf8),
            options: PutOptions(contentType: "image/png", cacheControl: "public,  max-age=60"))

        let request = try #require(server.requests.first)
        let lines = request.split(separator: "\r\n").map(String.init)
        #expect(lines[0] == "PUT /avatars/users/Zo%C3%AB%20%C3%9C/a%20b%2B.png HTTP/1.1")
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        #expect(headers["host"] == "127.0.0.1:\(server.port)")
        #expect(headers["content-type"] == "image/png")
        #expect(headers["content-length"] == "5")
        let payloadHash = Hex.sha256(Array("hello".utf8))
        #expect(headers["x-amz-content-sha256"] == payloadHash)

        // Recompute the signature from what arrived: it must match the Authorization that arrived.
        let authorization = try #require(headers["authorization"])
        let signedNames = try #require(
            authorization.split(separator: " ").first { $0.hasPrefix("SignedHeaders=") }
        )
        .dropFirst("SignedHeaders=".count).dropLast().split(separator: ";").map(String.init)
        #expect(signedNames == ["cache-control", "content-type", "host", "x-amz-content-sha256", "x-amz-date"])
        let signer = SigV4Signer(accessKeyID: "AKID", secretAccessKey: "SECRET", region: "us-east-1")
        let expected = signer.sign(
            .init(
                method: "PUT", canonicalURI: String(lines[0].split(separator: " ")[1]),
                headers: signedNames.map { ($0, headers[$0] ?? "<missing>") }),
            payloadHash: payloadHash, amzDate: headers["x-amz-date"] ?? "")
        #expect(authorization == expected.authorization)
    }

    @Test func redirectsAreNotFollowed() throws {
        let server = try ScriptedHTTPServer(responses: [
            ScriptedHTTPServer.response(307, "Temporary Redirect", headers: ["Location: /elsewhere"]),
            ScriptedHTTPServer.response(200, "OK", body: "followed"),
        ])
        defer { server.stop() }
        let store = Self.store(port: server.port)
        do {
            _ = try store.get("a.png")
            Issue.record("no error")
        } catch {
            #expect(error.code == .rejected)
            #expect(error.httpStatus == 307)
        }
        #expect(server.requests.count == 1)
    }

    @Test func serviceUnavailableIsTransient() throws {
        let body = "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
        let server = try ScriptedHTTPServer(responses: [
            ScriptedHTTPServer.response(503, "Service Unavailable", body: body)
        ])
        defer { server.stop() }
        let store = Self.store(port: server.port)
        do {
            try store.put("a.png", data: [1], options: PutOptions(contentType: "image/png"))
            Issue.record("no error")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.isTransient)
            #expect(error.httpStatus == 503)
            #expect(error.debugDescription.contains("SlowDown"))
        }
    }

    @Test func aServerThatNeverAnswersTimesOutAsTransient() throws {
        let server = try ScriptedHTTPServer(responses: [nil])
        defer { server.stop() }
        let store = Self.store(port: server.port, timeout: .seconds(1))
        do {
            _ = try store.exists("a.png")
            Issue.record("no error")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.isTransient)
            #expect(error.httpStatus == nil)
            #expect(error.operation == .exists)
        }
    }

    /// Issue 7, finding 3: a source over the cap is refused from `HEAD`, before any `GET`.
    @Test func anObjectOverTheCapIsTooLargeFromItsHeadWithoutAGet() throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\nConnection: close\r\n\r\n"
        let server = try ScriptedHTTPServer(responses: [head, ScriptedHTTPServer.response(200, "OK", body: "x")])
        defer { server.stop() }
        do {
            _ = try Self.store(port: server.port).get("a.png", maxBytes: 1000)
            Issue.record("no error")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(!error.isTransient)
        }
        #expect(server.requests.count == 1)
        #expect(server.requests.first?.hasPrefix("HEAD ") == true)
    }

    @Test func anObjectEmptiedBetweenHeadAndGetIsEmptyNotUnavailable() throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n"
        let invalidRange = ScriptedHTTPServer.response(416, "Requested Range Not Satisfiable", body: "")
        let server = try ScriptedHTTPServer(responses: [head, invalidRange])
        defer { server.stop() }
        #expect(try Self.store(port: server.port).get("a.png", maxBytes: 1000).data == [])
    }

    @Test func anEmptyObjectNeedsNoGet() throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        let server = try ScriptedHTTPServer(responses: [head])
        defer { server.stop() }
        #expect(try Self.store(port: server.port).get("a.png", maxBytes: 1000).data == [])
        #expect(server.requests.count == 1)
    }

    @Test func aBodyLongerThanItsHeadSaidIsTooLarge() throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n"
        let body = String(repeating: "x", count: 2000)
        let server = try ScriptedHTTPServer(responses: [head, ScriptedHTTPServer.response(200, "OK", body: body)])
        defer { server.stop() }
        #expect(throws: StorageError.self) { _ = try Self.store(port: server.port).get("a.png", maxBytes: 1000) }
        // The GET asked for at most one byte over the cap: a store that honours ranges sends no more.
        let get = try #require(server.requests.last)
        #expect(get.hasPrefix("GET "))
        #expect(get.lowercased().contains("range: bytes=0-1000"))
    }

    /// The cap holds while the body streams in, whatever the headers said: a store that ignores `Range` and sends
    /// a body with no length at all (read until the connection closes) gets `.tooLarge` (permanent).
    @Test func aBodyWithoutALengthIsCutOffAtTheCap() throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n"
        // Small enough for the socket buffers: the scripted server's one `send` never meets a closed peer.
        let unbounded = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + String(repeating: "x", count: 50_000)
        let server = try ScriptedHTTPServer(responses: [head, unbounded])
        defer { server.stop() }
        do {
            _ = try Self.store(port: server.port).get("a.png", maxBytes: 1000)
            Issue.record("no error")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(!error.isTransient)
            #expect(error.operation == .get)
        }
    }

    @Test func anErrorBodyIsReadOnlyUpToItsLimit() throws {
        let body = String(repeating: "y", count: S3HTTPClient.errorBodyLimit + 20_000)
        let server = try ScriptedHTTPServer(responses: [
            ScriptedHTTPServer.response(500, "Internal Server Error", body: body)
        ])
        defer { server.stop() }
        let request = try S3RequestBuilder(configuration: Self.configuration(port: server.port))
            .request(method: "GET", key: "a.png", body: nil)
        let client = S3HTTPClient(timeout: .seconds(5), maxConnectionsPerHost: 1)
        let response = try client.send(request).get()
        #expect(response.status == 500)
        #expect(response.bodyOverLimit)
        #expect(response.body.count == S3HTTPClient.errorBodyLimit)
    }

    @Test func aStoreThatWasShutDownRefusesCallsPermanently() async throws {
        let server = try ScriptedHTTPServer(responses: [ScriptedHTTPServer.response(200, "OK")])
        defer { server.stop() }
        let store = Self.store(port: server.port)
        await store.shutdown()
        await store.shutdown()  // idempotent
        do {
            _ = try store.exists("a.png")
            Issue.record("no error")
        } catch {
            #expect(error.code == .unavailable)
            #expect(!error.isTransient)
        }
        #expect(server.requests.isEmpty)
    }

    @Test func aRefusedConnectionIsTransientlyUnavailable() throws {
        let port = try S3TestEnvironment.closedPort()
        do {
            try Self.store(port: port).ping()
            Issue.record("no error")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.isTransient)
            #expect(error.httpStatus == nil)
        }
    }
}
