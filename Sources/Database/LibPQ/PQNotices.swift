import Clibpq
import Logging

/// Receives the server's notices and warnings (and errors that arrive while idle, such as the FATAL sent before a
/// terminated backend closes its socket) so that libpq does not print them to stderr.
///
/// libpq calls the receiver synchronously on the thread that is inside a libpq call on this connection, so no
/// synchronisation is needed. Only severity and SQLSTATE are logged: notice texts can quote data.
final class PQNoticeSink {
    private let logger: Logger
    /// A FATAL or PANIC arrived outside a statement (a terminated backend, a server shutting down): the server closes
    /// the connection right after sending it.
    private(set) var receivedFatal = false

    init(logger: Logger) {
        self.logger = logger
    }

    func install(on connection: OpaquePointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        _ = PQsetNoticeReceiver(
            connection,
            { context, result in
                guard let context, let result else { return }
                Unmanaged<PQNoticeSink>.fromOpaque(context).takeUnretainedValue().receive(result)
            }, context)
    }

    private func receive(_ result: OpaquePointer) {
        func field(_ code: Unicode.Scalar) -> String {
            PQresultErrorField(result, Int32(code.value)).map { String(cString: $0) } ?? "?"
        }
        let severity = field("V")
        if severity == "FATAL" || severity == "PANIC" {
            receivedFatal = true
        }
        logger.debug(
            "postgres notice",
            metadata: [
                DatabaseLogKey.severity: .string(severity),
                DatabaseLogKey.sqlState: .string(field("C")),
            ]
        )
    }
}
