import CropProtocol
import Database
import Foundation

/// Whether a forget covers a DLQ record's request (docs/DATA.md, window 5): `replay` refuses those before it
/// re-enqueues anything, so a forgotten user's request is not put back on the requests topic with a fresh retention.
/// The worker would supersede it anyway (the tombstone, migration 0009); this keeps it off the topic. Asks
/// `avatar_forgotten` (the same rule the worker applies) with the user id and `requested_at` in the request's body.
public struct ForgottenUsers: Sendable {
    let client: PostgresClient

    public init(client: PostgresClient) {
        self.client = client
    }

    /// Whether the user of `record`'s request was forgotten after it; false for a request that cannot be read.
    func cover(_ record: DLQRecord) throws -> Bool {
        guard
            let request = try? CropCodec.decodeRequest(
                record.message.value, contentType: record.message.headerString(MessageHeader.contentType)),
            let userID = UUID(uuidString: request.userID), request.hasRequestedAt
        else { return false }
        return try client.withConnection { connection in
            try connection.query(
                "SELECT avatar_forgotten($1, $2) AS forgotten", [.uuid(userID), .timestamp(request.requestedAt.date)]
            ).rows.first?.bool("forgotten") ?? false
        }
    }
}
