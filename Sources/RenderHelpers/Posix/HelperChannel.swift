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
/// renditions on their way back, handed over by descriptor instead of copied through the channel. Each job gets
/// its own pair, sealed before the helper sees them (docs/SECURITY.md): the source cannot be changed at all, the
/// result cannot grow or shrink, so a helper can neither alter what the worker wrote nor make the worker read past
/// the size it chose.
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

    /// A job's source: `bytes`, sealed against any write, growth or shrinking.
    static func sealedSource(_ bytes: [UInt8]) throws(HelperSystemError) -> MemoryFile {
        let file = try create("avatar-source")
        do {
            try file.write([bytes])
            try file.seal(CHELPER_SEAL_CONTENTS)
            return file
        } catch {
            file.close()
            throw error
        }
    }

    /// A job's result file: `capacity` bytes (holes: no page is taken until written), sealed at that size.
    static func sealedResult(capacity: Int) throws(HelperSystemError) -> MemoryFile {
        let file = try create("avatar-result")
        guard ftruncate(file.descriptor, off_t(capacity)) == 0 else {
            let error = HelperSystemError("ftruncate", -Int(errno))
            file.close()
            throw error
        }
        do {
            try file.seal(CHELPER_SEAL_SIZE)
            return file
        } catch {
            file.close()
            throw error
        }
    }

    private func seal(_ seals: Int32) throws(HelperSystemError) {
        let result = chelper_seal(descriptor, seals)
        guard result == 0 else { throw HelperSystemError("F_ADD_SEALS", Int(result)) }
    }

    /// Replaces the file's contents with `parts`, one after the other.
    func write(_ parts: [[UInt8]]) throws(HelperSystemError) {
        var offset = 0
        for part in parts {
            if let failure = part.withUnsafeBytes({ write($0, at: offset) }) { throw failure }
            offset += part.count
        }
        guard ftruncate(descriptor, off_t(offset)) == 0 else { throw HelperSystemError("ftruncate", -Int(errno)) }
    }

    /// In a helper: `parts` one after the other from the start of a sealed result file, through a shared mapping (a
    /// locked-down helper may not write a file: RLIMIT_FSIZE is 0). Throws `EFBIG` when they do not fit.
    func writeMapped(_ parts: [[UInt8]]) throws(HelperSystemError) {
        let capacity = try size()
        let total = parts.reduce(0) { $0 + $1.count }
        guard total <= capacity else { throw HelperSystemError("the result file", -Int(EFBIG)) }
        guard total > 0 else { return }
        let mapped = mmap(nil, total, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0)
        guard let mapping = mapped, mapping != UnsafeMutableRawPointer(bitPattern: -1) else {
            throw HelperSystemError("mmap", -Int(errno))
        }
        defer { munmap(mapping, total) }
        var offset = 0
        for part in parts {
            part.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress { (mapping + offset).copyMemory(from: base, byteCount: bytes.count) }
            }
            offset += part.count
        }
    }

    /// Its length in bytes.
    func size() throws(HelperSystemError) -> Int {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw HelperSystemError("fstat", -Int(errno)) }
        return Int(status.st_size)
    }

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
