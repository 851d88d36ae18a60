import CropGeometry
import FoundationEssentials
import Glibc
import Imaging
import Logging

// `avatar-bench formats` (bench/RESULTS.md, "Avatar formats", bench/bench-formats.sh): each photo's 512² avatar in every
// format, in one process on one libvips thread (one core, as a render slot): per format the bytes and the encode's
// CPU time on the render's thread, every run; and a whole job's CPU publishing PNG only against PNG + WebP + AVIF at
// 512 and WebP at 128, the two interleaved (their order alternating per round) so the machine's drift falls on
// both. `--save DIR` writes each photo's renditions of the last run as DIR/NAME.FORMAT for the quality figure (SSIM
// against the PNG, bench/formats_report.py) and the contact sheet.

struct FormatRecord: Encodable {
    var type = "format"
    var image: String
    var format: String
    var bytes: Int
    /// Encode CPU time of the 512² avatar, every run, ms.
    var encode_cpu_ms: [Double]
}

struct FormatJobRecord: Encodable {
    var type = "format-job"
    var image: String
    /// Whole render (probe + render) CPU time of the PNG-only job and of the four-rendition one, every round, ms.
    var png_only_cpu_ms: [Double]
    var multi_format_cpu_ms: [Double]
}

/// The process's CPU time (user + system, every thread), ms.
func processCPUms() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func ms(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
    return ms(usage.ru_utime) + ms(usage.ru_stime)
}

func formatCost(images: [String], runs: Int, rounds: Int, encoder: EncoderSettings, save: String?, logger: Logger)
    throws
{
    let renderer = AvatarRenderer(logger: logger)
    try renderer.warmUp()
    var every = RenderOptions(encoder: encoder, defaultCrop: .centre)
    every.formats = RenditionFormats(avatar: AvatarFormat.allCases)
    var pngOnly = RenderOptions(encoder: encoder, extraSizes: [128], defaultCrop: .centre)
    pngOnly.formats = RenditionFormats(avatar: [.png], extras: [.png])
    var multi = pngOnly
    multi.formats = RenditionFormats(avatar: [.png, .webp, .avif], extras: [.webp])
    for path in images {
        let bytes = try readBytes(path)
        let name = String(path.split(separator: "/").last ?? "")
        var cpu: [AvatarFormat: [Double]] = [:]
        var last: RenderResult?
        for _ in 0..<runs {
            let result = try renderer.render(renderer.probe(bytes), input: .centred, options: every)
            for (format, time) in result.timings.encodeCPUByFormat { cpu[format, default: []].append(time.ms) }
            last = result
        }
        guard let last else { continue }
        for rendition in [last.avatar] + last.extras {
            emit(
                FormatRecord(
                    image: name, format: rendition.format.rawValue, bytes: rendition.data.count,
                    encode_cpu_ms: cpu[rendition.format] ?? []))
            if let save {
                let file = "\(save)/\(name).\(rendition.format.fileExtension)"
                guard let handle = fopen(file, "wb") else { throw BenchError("cannot write \(file)") }
                _ = rendition.data.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, handle) }
                fclose(handle)
            }
        }
        var png: [Double] = []
        var four: [Double] = []
        for round in 0..<rounds {
            for options in round % 2 == 0 ? [pngOnly, multi] : [multi, pngOnly] {
                let start = processCPUms()
                _ = try renderer.render(renderer.probe(bytes), input: .centred, options: options)
                let spent = processCPUms() - start
                if options.formats == pngOnly.formats { png.append(spent) } else { four.append(spent) }
            }
        }
        emit(FormatJobRecord(image: name, png_only_cpu_ms: png, multi_format_cpu_ms: four))
    }
}
