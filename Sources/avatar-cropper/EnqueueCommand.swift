import ArgumentParser
import AvatarWorker
import CropGeometry
import CropProtocol
import Foundation
import Messaging

struct EnqueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Put crop requests on the requests topic and print their job ids.",
        discussion: """
            One job from flags (--user and --source), or many from JSON lines (--from FILE, - for stdin): \
            one CropRequest per line in the protobuf JSON mapping (lowerCamelCase or .proto field names). \
            A line without jobId gets a new one; without requestedAt, now. Messages are keyed by the \
            canonical (lower-cased) user id, as every producer should key them.
            """)

    @OptionGroup var config: ConfigOptions

    @Option(help: "User id (UUID).") var user: String?
    @Option(help: "Object-store key of the uploaded photo.") var source: String?
    @Option(name: .customLong("job-id"), help: "Job id (default: a new UUID).") var jobID: String?
    @Option(help: "Editor zoom.") var scale: Double?
    @Option(parsing: .unconditional, help: "Editor x offset in points.") var tx: Double = 0
    @Option(parsing: .unconditional, help: "Editor y offset in points.") var ty: Double = 0
    @Option(name: .customLong("mask-diameter"), help: "Mask diameter in points.") var maskDiameter: Double?
    @Option(name: .customLong("screen-scale"), help: "Screen scale of the editor.") var screenScale: Double?
    @Option(name: .customLong("reference-size"), help: "WxH the pose or rect refers to.") var referenceSize: String?
    @Option(help: "X,Y,SIDE pixel square instead of a pose.") var rect: String?
    @Option(help: "Avatar side in pixels.") var size: Int = 512
    @Option(help: "The avatar's formats, comma-separated: png, jpeg, webp, avif (default: the worker's image.formats).")
    var formats: String?
    @Option(help: "The extra sizes' formats, comma-separated (default: the worker's image.extra-formats).")
    var extraFormats: String?
    @Option(help: "JPEG quality.") var quality: Int = 90
    @Option(name: .customLong("extra-size"), help: "Extra rendition side (repeatable).") var extraSizes: [Int] = []
    @Flag(help: "Ask for a BlurHash.") var blurhash = false
    @Option(name: .customLong("from"), help: "JSON lines file of CropRequests (- for stdin).") var linesFile: String?
    @Option(name: .customLong("wire-format"), help: "protobuf or json.") var wireFormat: String = "protobuf"
    @Flag(name: .customLong("no-progress"), help: "No progress bar on stderr.") var noProgress = false
    @Option(
        name: .customLong("traceparent"),
        help: "W3C traceparent of the caller's span, the parent of the job's trace (default: each job starts a trace).")
    var traceParent: String?

    func run() async throws {
        let values = try config.values()
        let logger = try makeLogger("avatar-cropper.enqueue", values: values)
        let topic = try values.require(.topicRequests)
        let format: CropWireFormat = wireFormat == "json" ? .json : .protobuf
        let requests: [ValidatedCropRequest] = try linesFile.map(readLines) ?? [try requestFromFlags()]
        let parent = try traceParent.map { text in
            guard let value = TraceParent(header: text) else {
                throw ValidationError("--traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)")
            }
            return value
        }
        let producer = try KafkaProducer(configuration: try WorkerFactory.kafkaConfiguration(values), logger: logger)
        defer { producer.close(timeout: .seconds(10)) }
        let progress = ProgressBar(total: requests.count, enabled: !noProgress && requests.count > 1)
        // A bounded window of sends in flight: fast, without holding thousands of tasks.
        try await withThrowingTaskGroup(of: String.self) { group in
            var next = 0
            func add() throws {
                let request = requests[next]
                next += 1
                let record = KafkaRecord(
                    topic: topic, key: Array(request.userID.uuidString.lowercased().utf8),
                    value: try CropCodec.encode(request.message, format: format),
                    headers: [
                        KafkaHeader(key: MessageHeader.contentType, value: Array(format.contentType.utf8)),
                        KafkaHeader(key: MessageHeader.jobID, value: Array(request.jobID.utf8)),
                        // Every request carries trace context: the caller's span, or a new trace per job.
                        KafkaHeader(
                            key: TraceParent.headerName, value: Array((parent ?? TraceParent.random()).header.utf8)),
                    ])
                group.addTask {
                    _ = try await producer.send(record)
                    return request.jobID
                }
            }
            while next < min(requests.count, 256) { try add() }
            while let jobID = try await group.next() {
                print(jobID)
                progress.advance()
                if next < requests.count { try add() }
            }
        }
        progress.finish()
    }

    private func requestFromFlags() throws -> ValidatedCropRequest {
        guard let user, let userID = UUID(uuidString: user) else { throw ValidationError("--user must be a UUID") }
        guard let source else { throw ValidationError("--source is required (or --from FILE)") }
        let reference = try referenceSize.map(parseSize)
        var input = CropInput.centred
        if let rect {
            let parts = rect.split(separator: ",").compactMap { Double($0) }
            guard parts.count == 3 else { throw ValidationError("--rect expects X,Y,SIDE") }
            input = .rect(PixelRect(x: parts[0], y: parts[1], side: parts[2]), reference: reference)
        } else if let scale {
            input = .pose(EditorPose(scale: scale, tx: tx, ty: ty), reference: reference)
        }
        var settings = EditorSettings(outputSize: size)
        if let maskDiameter { settings.maskDiameter = maskDiameter }
        if let screenScale { settings.screenScale = screenScale }
        return ValidatedCropRequest(
            jobID: jobID ?? UUID().uuidString.lowercased(), userID: userID, sourceKey: source, input: input,
            outputSize: size, formats: try formats.map(Self.formatList),
            extraFormats: try extraFormats.map(Self.formatList),
            quality: quality, extraSizes: extraSizes,
            wantBlurHash: blurhash, requestedAt: Date(), editorSettings: settings)
    }

    /// `--formats`/`--extra-formats`' comma-separated list.
    static func formatList(_ text: String) throws -> [AvatarFormat] {
        switch RenditionFormats.parse(text) {
        case .success(let formats): return formats
        case .failure(let error): throw ValidationError("\(error)")
        }
    }

    private func readLines(_ path: String) throws -> [ValidatedCropRequest] {
        let data =
            path == "-"
            ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
        var requests: [ValidatedCropRequest] = []
        for (number, line) in String(decoding: data, as: UTF8.self).split(separator: "\n").enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            do {
                var message = try CropCodec.decode(
                    Avatar_Crop_V1_CropRequest.self, from: Array(text.utf8), format: .json)
                if message.jobID.isEmpty { message.jobID = UUID().uuidString.lowercased() }
                if !message.hasRequestedAt { message.requestedAt = .init(date: Date()) }
                requests.append(try ValidatedCropRequest(message))
            } catch {
                throw ValidationError("line \(number + 1): \(error)")
            }
        }
        return requests
    }

    private func parseSize(_ text: String) throws -> PixelSize {
        let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2 else { throw ValidationError("sizes are WxH, e.g. 1008x756") }
        return PixelSize(width: parts[0], height: parts[1])
    }
}
