import Foundation
import TestEnvironment
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Helpers of the telemetry tests: a plain HTTP client, free loopback ports, and a real
/// Prometheus server (Debian's `prometheus` package) started for one test.
enum TelemetryTestSupport {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 30
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return URLSession(configuration: configuration)
    }()

    static func request(_ url: String, method: String = "GET") async throws -> Response {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw Failure(description: "not an HTTP response") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            headers[String(describing: name).lowercased()] = String(describing: value)
        }
        return Response(status: http.statusCode, headers: headers, body: data)
    }

    /// A TCP port nothing listens on right now (bound to 127.0.0.1:0, then released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw Failure(description: "bind() failed") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "getsockname() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// An executable on PATH (or in /usr/bin), or nil.
    static func executable(_ name: String) -> URL? {
        TestService.tool(name).value.map { URL(fileURLWithPath: $0) }
    }

    static let dashboards = TestFiles.url("dashboards")

    /// Runs a command to its end; returns its exit status and combined output.
    static func run(_ executable: URL, _ arguments: [String], in directory: URL? = nil) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Polls `condition` until it holds; records an issue and throws when `timeout` passes first.
    static func waitUntil(
        _ what: String, timeout: Duration = .seconds(90), _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            if (try? await condition()) == true { return }
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for \(what)")
                throw Failure(description: "timed out waiting for \(what)")
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }
}

/// A Prometheus server on 127.0.0.1 scraping one target every second, with the project's rule file
/// loaded and evaluated every second; its data lives in a temporary folder removed by `stop()`.
final class PrometheusServer: @unchecked Sendable {
    // @unchecked Sendable: every property is set in init and only read afterwards; `Process` is
    // only terminated and waited on, from one test.
    let url: String
    let rulesFile: URL
    private let process: Process
    private let directory: URL
    private let log: FileHandle

    init(scraping target: String, rules: URL) throws {
        guard let binary = TelemetryTestSupport.executable("prometheus") else {
            throw TelemetryTestSupport.Failure(description: "no prometheus binary (apt-get install prometheus)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            WorkerTestSupport.uniqueName("prometheus"))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        rulesFile = directory.appendingPathComponent("alerts.rules.yml")
        try FileManager.default.copyItem(at: rules, to: rulesFile)
        let config = """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
              evaluation_interval: 1s
            rule_files:
              - \(rulesFile.path)
            scrape_configs:
              - job_name: avatar-cropper
                static_configs:
                  - targets: ["\(target)"]
            """
        let configFile = directory.appendingPathComponent("prometheus.yml")
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        let port = try TelemetryTestSupport.freePort()
        url = "http://127.0.0.1:\(port)"
        let logFile = directory.appendingPathComponent("prometheus.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        log = try FileHandle(forWritingTo: logFile)

        process = Process()
        // `timeout` ends Prometheus even if this test process dies without stopping it.
        process.executableURL = TelemetryTestSupport.executable("timeout") ?? URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = [
            "--signal=TERM", "900", binary.path,
            "--config.file=\(configFile.path)",
            "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
            "--web.listen-address=127.0.0.1:\(port)",
            "--log.level=warn",
        ]
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    /// Prometheus' own log, for failure messages.
    var logText: String {
        (try? String(contentsOf: directory.appendingPathComponent("prometheus.log"), encoding: .utf8)) ?? ""
    }

    /// Stops Prometheus and its `timeout` wrapper. Both are in the wrapper's process group; the
    /// signal goes to that group because the wrapper inherits this process's blocked SIGTERM
    /// (Prometheus unblocks it, and the wrapper exits once Prometheus has).
    func stop() {
        if process.isRunning {
            let group = -process.processIdentifier
            kill(group, SIGTERM)
            let deadline = Date().addingTimeInterval(20)
            while process.isRunning && Date() < deadline { usleep(50_000) }
            if process.isRunning { kill(group, SIGKILL) }
            process.waitUntilExit()
        }
        try? log.close()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: HTTP API

    /// The `data` of a successful API answer; throws on an HTTP or API error.
    func api(_ path: String, _ query: [String: String] = [:]) async throws -> [String: Any] {
        var components = URLComponents(string: url + path)!
        components.queryItems = query.map { URLQueryItem(name: $0.key, value: $0.value) }
        // '+' is a space in query strings; keep it literal.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        let response = try await TelemetryTestSupport.request(components.url!.absoluteString)
        let json = try JSONSerialization.jsonObject(with: response.body) as? [String: Any] ?? [:]
        guard response.status == 200, json["status"] as? String == "success" else {
            throw TelemetryTestSupport.Failure(
                description: "\(path) \(query): HTTP \(response.status): "
                    + "\(json["errorType"] ?? "") \(json["error"] ?? response.text)")
        }
        return json["data"] as? [String: Any] ?? [:]
    }

    struct Sample {
        var labels: [String: String]
        var value: Double
    }

    /// An instant query; throws on any API error (bad expression, unknown function, ...).
    func query(_ expression: String) async throws -> [Sample] {
        let data = try await api("/api/v1/query", ["query": expression])
        switch data["resultType"] as? String {
        case "vector":
            return (data["result"] as? [[String: Any]] ?? []).map { entry in
                let value = (entry["value"] as? [Any])?.last as? String
                return Sample(
                    labels: entry["metric"] as? [String: String] ?? [:], value: value.flatMap(Double.init) ?? .nan)
            }
        case "scalar":
            let value = (data["result"] as? [Any])?.last as? String
            return [Sample(labels: [:], value: value.flatMap(Double.init) ?? .nan)]
        default:
            throw TelemetryTestSupport.Failure(description: "unexpected result type for \(expression): \(data)")
        }
    }
}
