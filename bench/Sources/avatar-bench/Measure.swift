import FoundationEssentials
import Glibc

/// Process memory from /proc/self/status, in KiB.
enum ProcessMemory {
    /// Resident set size now.
    static func residentKiB() -> Int { field("VmRSS") }
    /// Peak resident set size of the process so far (high-water mark).
    static func peakKiB() -> Int { field("VmHWM") }

    /// A `Name: value kB` line of a /proc file (`status`, `smaps_rollup`), in KiB; -1 when absent.
    static func field(_ name: String, in path: String = "/proc/self/status") -> Int {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path)),
            let text = String(data: data, encoding: .utf8)
        else { return -1 }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            let digits = line.dropFirst(name.count + 1).filter(\.isNumber)
            return Int(digits) ?? -1
        }
        return -1
    }
}

extension Duration {
    var ms: Double {
        let parts = components
        return Double(parts.seconds) * 1000 + Double(parts.attoseconds) / 1e15
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// One JSON object per line on standard output, flushed (the driver reads them as they come).
/// `first` and `second` both run, in that order on an even `pair` and swapped on an odd one, so that the machine's
/// drift weighs on both alike; their results in the order of the arguments.
func inTurn<Value>(pair: Int, _ first: () throws -> Value, _ second: () throws -> Value) rethrows -> (Value, Value) {
    if pair.isMultiple(of: 2) {
        let one = try first()
        return (one, try second())
    }
    let two = try second()
    return (try first(), two)
}

func emit<T: Encodable>(_ value: T) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    guard let data = try? encoder.encode(value), let line = String(data: data, encoding: .utf8) else { return }
    print(line)
    fflush(nil)
}

/// Writes a line to standard error (file descriptor 2; the C `stderr` global is not concurrency-safe).
func printError(_ message: String) {
    let line = message + "\n"
    _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
}
