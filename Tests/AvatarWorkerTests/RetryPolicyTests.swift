import AvatarWorker
import Foundation
import Storage
import Testing

/// Records requested sleeps instead of sleeping.
///
/// `@unchecked Sendable`: every access goes through `lock`.
final class SleepRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Duration] = []

    var sleeps: [Duration] { lock.withLock { recorded } }

    func policy(delays: [Duration] = [.milliseconds(500), .seconds(1), .seconds(2)], maxAttempts: Int = 3)
        -> RetryPolicy
    {
        RetryPolicy(delays: delays, maxAttempts: maxAttempts) { [self] duration in
            lock.withLock { recorded.append(duration) }
        }
    }
}

@Suite struct RetryPolicyTests {
    static let transient = StorageError(code: .unavailable, httpStatus: 503)
    static let permanent = StorageError(code: .accessDenied, httpStatus: 403)

    @Test func defaultsAreThreeAttemptsWaitingHalfASecondThenOne() {
        let policy = RetryPolicy()
        #expect(policy.maxAttempts == 3)
        #expect(policy.delays == [.milliseconds(500), .seconds(1)], "one delay per gap between attempts")
    }

    @Test func firstSuccessMakesOneAttemptAndNoSleep() throws {
        let recorder = SleepRecorder()
        let result = try recorder.policy().run { (attempt: Int) throws(StorageError) -> String in "ok\(attempt)" }
        #expect(result.value == "ok1")
        #expect(result.attempts == 1)
        #expect(recorder.sleeps.isEmpty)
    }

    @Test func transientErrorsAreRetriedUntilSuccess() throws {
        let recorder = SleepRecorder()
        var seen: [Int] = []
        var retries: [(Int, Duration)] = []
        let result = try recorder.policy().run(
            { (attempt: Int) throws(StorageError) -> Int in
                seen.append(attempt)
                if attempt < 3 { throw Self.transient }
                return 42
            },
            onRetry: { error, attempt, delay in
                #expect(error.code == .unavailable)
                retries.append((attempt, delay))
            })
        #expect(result.value == 42)
        #expect(result.attempts == 3)
        #expect(seen == [1, 2, 3])
        #expect(retries.map(\.0) == [1, 2])
        #expect(retries.map(\.1) == [.milliseconds(500), .seconds(1)])
        #expect(recorder.sleeps == [.milliseconds(500), .seconds(1)])
    }

    @Test func givesUpAfterMaxAttemptsAndReportsTheAttemptCount() {
        let recorder = SleepRecorder()
        var calls = 0
        do {
            _ = try recorder.policy().run { (_: Int) throws(StorageError) -> Int in
                calls += 1
                throw Self.transient
            }
            Issue.record("no error")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.isTransient)
            #expect(error.attempts == 3)
            #expect(error.httpStatus == 503)
            #expect(error.description.contains("after 3 attempts"))
        }
        #expect(calls == 3)
        // Attempt n waits delays[n-1] before attempt n+1; no wait after the last attempt.
        #expect(recorder.sleeps == [.milliseconds(500), .seconds(1)])
    }

    @Test func permanentErrorsAreNotRetried() {
        let recorder = SleepRecorder()
        var calls = 0
        do {
            _ = try recorder.policy().run { (_: Int) throws(StorageError) -> Int in
                calls += 1
                throw Self.permanent
            }
            Issue.record("no error")
        } catch {
            #expect(error.code == .accessDenied)
            #expect(error.attempts == 1)
        }
        #expect(calls == 1)
        #expect(recorder.sleeps.isEmpty)
    }

    @Test func aPermanentErrorAfterTransientOnesStopsAtOnce() {
        let recorder = SleepRecorder()
        do {
            _ = try recorder.policy(maxAttempts: 5).run { (attempt: Int) throws(StorageError) -> Int in
                throw attempt == 1 ? Self.transient : Self.permanent
            }
            Issue.record("no error")
        } catch {
            #expect(error.code == .accessDenied)
            #expect(error.attempts == 2)
        }
        #expect(recorder.sleeps == [.milliseconds(500)])
    }

    @Test func moreAttemptsThanDelaysRepeatTheLastDelay() {
        let recorder = SleepRecorder()
        do {
            _ = try recorder.policy(maxAttempts: 5).run { (_: Int) throws(StorageError) -> Int in
                throw Self.transient
            }
            Issue.record("no error")
        } catch {
            #expect(error.attempts == 5)
        }
        #expect(recorder.sleeps == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(2)])
    }

    /// Any error type, with the caller's judgement of what is transient (the database steps' use).
    @Test func anyErrorTypeIsRetriedAsItsClassifierSays() {
        struct StepError: Error, Equatable {
            var transient: Bool
            var attempt: Int
        }
        let recorder = SleepRecorder()
        var retried: [Int] = []
        do {
            _ = try recorder.policy(maxAttempts: 5).run(
                { (attempt: Int) throws(StepError) -> Int in
                    throw StepError(transient: attempt < 3, attempt: attempt)
                },
                isTransient: \.transient,
                onRetry: { error, attempt, _ in
                    #expect(error.attempt == attempt)
                    retried.append(attempt)
                })
            Issue.record("no error")
        } catch {
            // The third attempt's error is not transient: thrown unchanged, no fourth attempt.
            #expect(error == StepError(transient: false, attempt: 3))
        }
        #expect(retried == [1, 2])
        #expect(recorder.sleeps == [.milliseconds(500), .seconds(1)])
    }

    @Test func theGenericRunReportsItsAttempts() throws {
        let recorder = SleepRecorder()
        struct Flaky: Error {}
        let result = try recorder.policy().run(
            { (attempt: Int) throws(Flaky) -> String in
                if attempt == 1 { throw Flaky() }
                return "ok"
            }, isTransient: { _ in true })
        #expect(result.value == "ok")
        #expect(result.attempts == 2)
    }

    @Test func atLeastOneAttemptEvenWithZeroMaxAttempts() throws {
        let recorder = SleepRecorder()
        let result = try recorder.policy(maxAttempts: 0).run { (_: Int) throws(StorageError) -> Int in 1 }
        #expect(result.attempts == 1)
    }
}
