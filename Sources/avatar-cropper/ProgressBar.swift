import Foundation

/// A one-line progress bar on stderr, drawn only when stderr is a terminal (a log file or a pipe gets no
/// carriage-return noise).
final class ProgressBar: @unchecked Sendable {
    // @unchecked Sendable: only used from the command's task.
    private let total: Int
    private let enabled: Bool
    private var done = 0
    private var lastDrawn = -1

    init(total: Int, enabled: Bool, isTerminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.total = total
        self.enabled = enabled && isTerminal
    }

    func advance() {
        done += 1
        guard enabled else { return }
        let percent = total == 0 ? 100 : done * 100 / total
        guard percent != lastDrawn else { return }
        lastDrawn = percent
        let width = 30
        let filled = width * done / max(total, 1)
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(done)/\(total) \(percent)%".utf8))
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
