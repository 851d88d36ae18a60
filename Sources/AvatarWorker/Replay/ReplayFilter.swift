import CropProtocol
import Foundation

/// Which DLQ records a replay selects. Every non-empty criterion must match; an empty set
/// means "any". By default only transient failures are selected: a permanent failure (bad
/// image, too small, malformed request) fails the same way again unless it is asked for.
public struct ReplayFilter: Sendable, Equatable {
    /// Error codes (`STORAGE_UNAVAILABLE`, ...); empty: any code.
    public var errorCodes: Set<String>
    /// Error classes; empty: any class (a record without a class then matches too).
    public var errorClasses: Set<CropErrorClass>
    /// First failure at or after this time (inclusive).
    public var from: Date?
    /// First failure before this time (exclusive).
    public var to: Date?
    /// User ids (the message key, compared case-insensitively); empty: any user.
    public var userIDs: Set<String>
    /// Job ids; empty: any job.
    public var jobIDs: Set<String>

    public init(
        errorCodes: Set<String> = [], errorClasses: Set<CropErrorClass> = [.transient], from: Date? = nil,
        to: Date? = nil, userIDs: Set<String> = [], jobIDs: Set<String> = []
    ) {
        self.errorCodes = errorCodes
        self.errorClasses = errorClasses
        self.from = from
        self.to = to
        self.userIDs = Set(userIDs.map { $0.lowercased() })
        self.jobIDs = jobIDs
    }

    /// One criterion of the filter, to say why a record was left out.
    public enum Criterion: String, Sendable, Hashable, CaseIterable {
        case errorCode = "error code"
        case errorClass = "error class"
        case time = "time range"
        case user = "user"
        case job = "job id"
    }

    public func matches(_ record: DLQRecord) -> Bool {
        failedCriteria(record).isEmpty
    }

    /// The criteria `record` does not meet (empty when it is selected).
    public func failedCriteria(_ record: DLQRecord) -> Set<Criterion> {
        var failed: Set<Criterion> = []
        if !errorCodes.isEmpty && !(record.errorCode.map(errorCodes.contains) ?? false) {
            failed.insert(.errorCode)
        }
        if !errorClasses.isEmpty && !(record.errorClass.map(errorClasses.contains) ?? false) {
            failed.insert(.errorClass)
        }
        if from != nil || to != nil {
            if let failedAt = record.failedAt {
                if let from, failedAt < from { failed.insert(.time) }
                if let to, failedAt >= to { failed.insert(.time) }
            } else {
                failed.insert(.time)
            }
        }
        if !userIDs.isEmpty && !(record.userID.map { userIDs.contains($0.lowercased()) } ?? false) {
            failed.insert(.user)
        }
        if !jobIDs.isEmpty && !(record.jobID.map(jobIDs.contains) ?? false) {
            failed.insert(.job)
        }
        return failed
    }
}
