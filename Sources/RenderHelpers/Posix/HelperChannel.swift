import CHelperProcess
import Glibc

/// A failed system call of the helper machinery: which one, and its errno.
public struct HelperSystemError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var code: Int32

    init(_ operation: String, _ result: Int) {
        self.operation = operation
        self.code = Int32(clamping: -result)
    }

    public var description: String { "\(operation): \(String(cString: strerror(code)))" }
}

/// One end of a helper's channel: a `SOCK_SEQPACKET` Unix socket, so each message arrives whole and alone, with
/// the descriptors sent beside it (`SCM_RIGHTS`). Messages are small (`maxMessage`); bytes travel in memory files.
final class HelperChannel {
    /// The largest message either side sends (a header, a plan, timings: a few KiB).
    static let maxMessage = 64 * 1024
    /// Descriptors one message may carry.
    static let maxDescriptors = 2

    /// The descriptor a helper finds its channel on (the spawn puts it there).
    static let helperDescriptor = Int32(CHELPER_CHANNEL_FD)

    let descriptor: Int32
    private var buffer = [UInt8](repeating: 0, count: maxMessage)

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// A connected pair: the parent's end, and the descriptor the child gets as its channel.
    static func pair() throws(HelperSystemError) -> (parent: HelperChannel, child: Int32) {
        var descriptors: [Int32] = [-1, -1]
        let result = chelper_socketpair(&descriptors)
        guard result == 0 else { throw HelperSystemError("socketpair", Int(result)) }
        return (HelperChannel(descriptor: descriptors[0]), descriptors[1])
    }

    func send(_ bytes: [UInt8], descriptors: [Int32] = []) throws(HelperSystemError) {
        let sent = bytes.withUnsafeBytes { raw in
            descriptors.withUnsafeBufferPointer { fds in
                chelper_send(descriptor, raw.baseAddress, raw.count, fds.baseAddress, Int32(fds.count))
            }
        }
        guard sent == bytes.count else { throw HelperSystemError("sendmsg", sent < 0 ? sent : -Int(EMSGSIZE)) }
    }

    /// Waits up to `milliseconds` for a message (or the peer's end): true when `receive` will not block.
    func waitReadable(milliseconds: Int32) throws(HelperSystemError) -> Bool {
        let result = chelper_wait_readable(descriptor, milliseconds)
        guard result >= 0 else { throw HelperSystemError("poll", Int(result)) }
        return result == 1
    }

    /// The next message and its descriptors (the caller owns them); nil once the peer is gone.
    func receive() throws(HelperSystemError) -> (bytes: [UInt8], descriptors: [Int32])? {
        var fds = [Int32](repeating: -1, count: Self.maxDescriptors)
        var count: Int32 = 0
        let capacity = buffer.count
        let received = buffer.withUnsafeMutableBytes { raw in
            chelper_receive(descriptor, raw.baseAddress, capacity, &fds, Int32(Self.maxDescriptors), &count)
        }
        guard received >= 0 else { throw HelperSystemError("recvmsg", received) }
        if received == 0 { return nil }
        return (Array(buffer[..<received]), Array(fds[..<Int(count)]))
    }

    func close() {
        _ = Glibc.close(descriptor)
    }

    /// In a helper: a thread ends the process with `_exit(status)` as soon as the worker's end of this channel is
    /// gone, even while the helper is stuck in a C call that never returns.
    func exitWhenPeerGone(status: Int32) throws(HelperSystemError) {
        let result = chelper_exit_when_peer_gone(descriptor, status)
        guard result == 0 else { throw HelperSystemError("pthread_create", Int(result)) }
    }
}

/// An anonymous memory file (`memfd_create`): the source photo on its way to a helper, and the encoded
/// renditions on their way back, handed over by descriptor instead of copied through the channel.
struct MemoryFile {
    let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    static func create(_ name: String) throws(HelperSystemError) -> MemoryFile {
        let descriptor = chelper_memfd(name)
        guard descriptor >= 0 else { throw HelperSystemError("memfd_create", Int(descriptor)) }
        return MemoryFile(descriptor: descriptor)
    }

    /// Replaces the file's contents with `parts`, one after the other. The pages the file already has are written
    /// over, not freed and allocated again (a kernel page is zeroed when a file gets it), and what lay past the new
    /// end is dropped: nothing of the previous contents is left.
    func write(_ parts: [[UInt8]]) throws(HelperSystemError) {
        var offset = 0
        for part in parts {
            if let failure = part.withUnsafeBytes({ write($0, at: offset) }) { throw failure }
            offset += part.count
        }
        guard ftruncate(descriptor, off_t(offset)) == 0 else { throw HelperSystemError("ftruncate", -Int(errno)) }
    }

    /// Writes zeros over the whole file, keeping its pages and its size: what it held is gone, and the next
    /// `write` finds its pages.
    func zeroFill() throws(HelperSystemError) {
        let size = try size()
        var offset = 0
        while offset < size {
            let count = min(Self.zeros.count, size - offset)
            let failure = Self.zeros.withUnsafeBytes {
                write(UnsafeRawBufferPointer(rebasing: $0[..<count]), at: offset)
            }
            if let failure { throw failure }
            offset += count
        }
    }

    /// Gives the file's pages back when it holds more than `bytes` (its contents are then gone too).
    func release(ifLargerThan bytes: Int) throws(HelperSystemError) {
        guard try size() > bytes else { return }
        guard ftruncate(descriptor, 0) == 0 else { throw HelperSystemError("ftruncate", -Int(errno)) }
    }

    /// Its length in bytes.
    func size() throws(HelperSystemError) -> Int {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw HelperSystemError("fstat", -Int(errno)) }
        return Int(status.st_size)
    }

    private static let zeros = [UInt8](repeating: 0, count: 1 << 16)

    /// Writes all of `bytes` at `offset`; the failure, or nil.
    private func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> HelperSystemError? {
        var written = 0
        while written < bytes.count {
            let result = pwrite(
                descriptor, bytes.baseAddress! + written, bytes.count - written, off_t(offset + written))
            guard result > 0 else {
                if result < 0, errno == EINTR { continue }
                return HelperSystemError("pwrite", result < 0 ? -Int(errno) : -Int(EIO))
            }
            written += result
        }
        return nil
    }

    /// `length` bytes from `offset`; throws if the file is shorter.
    func read(offset: Int, length: Int) throws(HelperSystemError) -> [UInt8] {
        guard length > 0 else { return [] }
        var failure: Int?
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, initialised in
            var done = 0
            while done < length {
                let result = pread(descriptor, buffer.baseAddress! + done, length - done, off_t(offset + done))
                if result < 0, errno == EINTR { continue }
                guard result > 0 else {
                    failure = result < 0 ? -Int(errno) : -Int(EIO)
                    break
                }
                done += result
            }
            initialised = done
        }
        if let failure { throw HelperSystemError("pread", failure) }
        return bytes
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}
