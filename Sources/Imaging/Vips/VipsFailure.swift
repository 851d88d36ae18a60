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

    /// libvips could not allocate memory (the condition the memory fallback retries). A decoder's
    /// security-limit refusal is not: libheif reports it as "Memory allocation error: Security limit
    /// exceeded", but it refuses the file, whatever memory is free.
    var isOutOfMemory: Bool {
        guard !isSecurityLimit else { return false }
        let text = message.lowercased()
        return ["out of memory", "vips_malloc", "vips_tracked_malloc", "cannot allocate", "memory allocation"]
            .contains { text.contains($0) }
    }

    /// A decoder refused the file by its own limits (libheif: "Security limit exceeded: Image size
    /// 17000x17000 exceeds the maximum image size 16384x16384"): the same file fails the same way.
    var isSecurityLimit: Bool {
        message.lowercased().contains("security limit")
    }
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
