import Cvips
import CvipsShim

/// A failed libvips call: the operation and libvips' error text. Internal; the renderer maps it
/// to an `ImagingError` that knows which stage failed.
struct VipsFailure: Error, Sendable {
    var operation: String
    var message: String

    /// Reads and clears libvips' error buffer. `vips_error_buffer_copy` copies and clears in one
    /// step, so concurrent renders cannot clear each other's message between a read and a clear
    /// (they may still interleave text; the message is only used for logs and classification).
    static func take(operation: String) -> VipsFailure {
        guard let text = vips_error_buffer_copy() else {
            return VipsFailure(operation: operation, message: "")
        }
        defer { cvips_free(text) }
        let message = String(cString: text).trimmingTrailingNewlines()
        return VipsFailure(operation: operation, message: message)
    }

    /// libvips could not allocate memory (the condition the memory fallback retries); never a
    /// decoder's security-limit refusal, which libheif words as a "memory allocation error".
    var isOutOfMemory: Bool {
        let text = message.lowercased()
        return !isSecurityLimit
            && ["out of memory", "vips_malloc", "vips_tracked_malloc", "cannot allocate", "memory allocation"]
                .contains { text.contains($0) }
    }

    /// A decoder refused the file for exceeding its own limits (image size, number of tiles…).
    var isSecurityLimit: Bool { message.lowercased().contains("security limit") }
}

/// The one place a libvips return code is checked.
@inline(__always)
func vipsCheck(_ result: Int32, _ operation: @autoclosure () -> String) throws(VipsFailure) {
    if result != 0 {
        throw VipsFailure.take(operation: operation())
    }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while let last = text.last, last.isNewline || last == " " { text = text.dropLast() }
        return String(text)
    }
}
