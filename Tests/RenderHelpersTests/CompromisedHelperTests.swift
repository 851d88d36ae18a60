import Foundation
import Glibc
import Imaging
import Logging
import Sandbox
import TestEnvironment
import Testing

@testable import RenderHelpers

/// A render helper taken over by its upload (docs/SECURITY.md, "What a render helper may do"): the helper itself,
/// locked down and between its probe and its render, makes the calls code an attacker injected would make
/// (`EscapeAttempts`, a debug-build seam) — read the worker's environment, a secrets file its uid can read, another
/// job's photo through the worker's descriptor, /etc/passwd, the worker's memory; list the worker's descriptors, lower
/// its priority, create SysV shared memory, open a socket, signal the worker, start a process, and make the worker
/// the owner of its channel's signals. This process plays the worker: a secret in its environment, a photo in a
/// memory file, made non-dumpable as `WorkerFactory` makes the worker. The same calls made here, unlocked, show each
/// is a real call that works where nothing stops it.
@Suite("Compromised render helper", .serialized)
struct CompromisedHelperTests {
    static let logger = Logger(label: "test.compromised-helper")

    @Test("none of the attack's escapes works from a locked-down helper; each works from the unlocked worker")
    func escapes() throws {
        let secret = "canary-secret-\(UInt64.random(in: 1...UInt64.max))"
        setenv("AVATAR_TEST_CANARY", secret, 1)
        try ProcessLockdown.protectSecrets()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("compromised-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secrets = directory.appendingPathComponent("secret-access-key")
        try Data(secret.utf8).write(to: secrets)
        // Readable by the helpers' uid, as a Kubernetes secret volume is by the worker's.
        if getuid() == 0 {
            chown(directory.path, ProcessLockdown.unprivilegedID, ProcessLockdown.unprivilegedID)
            chown(secrets.path, ProcessLockdown.unprivilegedID, ProcessLockdown.unprivilegedID)
        }
        let photo = try MemoryFile.sealedSource(Array("another user's photo".utf8))
        defer { photo.close() }

        // Unlocked, in this process, each call works (but starting a process, which the attempt's child ends at
        // once, and the priority, which only lowers this process's own).
        for (name, attempt) in EscapeAttempts.attempts(worker: getpid(), photo: photo.descriptor, secrets: secrets.path)
        {
            #expect(attempt(), "unlocked, \(name) did not work: the attempt proves nothing")
        }
        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 0)

        let deaths = Deaths()
        let pool = try RenderHelperPool(
            launch: .init(executable: try TestFiles.requireCropperBinary(), vipsConcurrency: 1), size: 2,
            logger: Self.logger, onDeath: { deaths.add($0) })
        defer { pool.shutdown() }
        let bytes = Array(
            try Data(contentsOf: TestFiles.fixtures.appendingPathComponent("size/craft-beer_640x640.jpg")))
        let attack = bytes + Array("AVATAR-TEST-ESCAPE=\(getpid()),\(photo.descriptor),\(secrets.path);".utf8)
        func render(_ source: [UInt8], forkedWarm: Bool = false) throws -> RenderResult {
            var session = try pool.session(limits: ImageLimits(), seams: .sourceMarkers)
            // A helper of the kind asked for: the spawned ones serve nothing and are replaced.
            for _ in 0..<10 where forkedWarm && (session as? HelperRenderSession)?.helperForkedWarm != true {
                session.end()
                session = try pool.session(limits: ImageLimits(), seams: .sourceMarkers)
            }
            #expect(!forkedWarm || (session as? HelperRenderSession)?.helperForkedWarm == true)
            defer { session.end() }
            let probed = try session.probe(source, input: .centred, options: RenderOptions(), cancellation: nil)
            return try session.render(
                fallback: false, reservedBytes: probed.estimate.fullResolution, cancellation: nil)
        }
        // The first attack on a helper spawned while the template warms up, the others on helpers forked from it.
        for round in 0..<3 {
            if round == 1 { #expect(pool.waitForTemplate(timeout: .seconds(120)) && pool.templateForksWarm) }
            do {
                _ = try render(attack, forkedWarm: round > 0)
                Issue.record("the attacked render returned")
            } catch let crash as RenderHelperCrash {
                // Every escape refused; the last call, outside the allow-list, killed the helper.
                #expect(crash.signal == SIGSYS, "\(crash)")
            } catch let error as ImagingError {
                Issue.record("from a locked-down helper: \(error.detail)")
            }
        }
        #expect(deaths.signals == [SIGSYS, SIGSYS, SIGSYS])
        // This process, the worker, is untouched and the pool still renders.
        #expect(kill(getpid(), 0) == 0)
        _ = try render(bytes)
    }
}
