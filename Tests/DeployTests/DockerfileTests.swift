import AvatarWorker
import Foundation
import Testing

@Suite("Container image (deploy/Dockerfile)")
struct DockerfileTests {
    let dockerfile: Dockerfile
    let stages: [Dockerfile.Stage]

    init() throws {
        dockerfile = try Deploy.dockerfile()
        stages = dockerfile.stages
    }

    var runtime: Dockerfile.Stage { stages[stages.count - 1] }

    @Test("multi-stage: a Swift build stage, then a debian:bookworm-slim runtime")
    func stages_() throws {
        try #require(stages.count >= 2, "expected at least two FROM stages")
        let build = try #require(stages.first { $0.image.hasPrefix("swift:") })
        #expect(build.name != nil, "the build stage needs a name for COPY --from")
        #expect(build.image.contains("bookworm"), "build on the runtime's Debian release, so library ABIs match")
        #expect(runtime.image == "debian:bookworm-slim")
        #expect(stages.dropLast().allSatisfy { $0.image != runtime.image })
    }

    @Test("the Swift image is at least the package's swift-tools-version")
    func toolchainVersion() throws {
        let manifest = try Repo.text("Package.swift")
        let toolsVersion = try #require(
            manifest.split(separator: "\n").first?.split(separator: ":").last?
                .trimmingCharacters(in: .whitespaces))
        let build = try #require(stages.first { $0.image.hasPrefix("swift:") })
        let imageVersion = String(build.image.dropFirst("swift:".count).prefix { $0.isNumber || $0 == "." })
        let wanted = toolsVersion.split(separator: ".").compactMap { Int($0) }
        let have = imageVersion.split(separator: ".").compactMap { Int($0) }
        #expect(have.lexicographicallyPrecedes(wanted) == false, "swift:\(imageVersion) < tools \(toolsVersion)")
    }

    @Test("the build stage builds librdkafka with the project's script and links Swift statically")
    func buildStage() throws {
        let build = try #require(stages.first { $0.image.hasPrefix("swift:") })
        let runs = build.all("RUN").map(\.arguments).joined(separator: "\n")
        #expect(runs.contains("scripts/dev/build-librdkafka.sh"))
        #expect(runs.contains("swift build -c release"))
        #expect(runs.contains("--static-swift-stdlib"))
        #expect(
            runs.contains("libvips-dev") && runs.contains("libdeflate-dev")
                && runs.contains("liblcms2-dev") && runs.contains("libpq-dev"))
        let environment = build.all("ENV").map(\.arguments).joined(separator: "\n")
        #expect(environment.contains("PKG_CONFIG_PATH="), "swift build must find the built librdkafka")
    }

    /// The test seams (docs/ARCHITECTURE.md §3, "Test seams") are compiled in only where `AVATAR_TEST_SEAMS` is
    /// defined: debug builds, never the image's release build.
    @Test("the image's worker has no test seams: a release build, which Package.swift gives none")
    func noTestSeams() throws {
        let build = try #require(stages.first { $0.image.hasPrefix("swift:") })
        let runs = build.all("RUN").map(\.arguments).joined(separator: "\n")
        #expect(runs.contains("swift build -c release") && !runs.contains("AVATAR_TEST_SEAMS"))
        let manifest = try Repo.text("Package.swift")
        let defines = manifest.ranges(of: ".define(\"AVATAR_TEST_SEAMS\"").count
        #expect(defines == 1 && manifest.contains(".define(\"AVATAR_TEST_SEAMS\", .when(configuration: .debug))"))
    }

    @Test("both stages install libheif >= 1.19 with the project's script, before libvips pulls Debian 12's 1.15")
    func libheif() throws {
        let build = try #require(stages.first { $0.image.hasPrefix("swift:") })
        let invocations = [(build, "scripts/dev/install-libheif.sh"), (runtime, "install-libheif.sh --runtime")]
        for (stage, invocation) in invocations {
            let runs = stage.all("RUN")
            let heif = try #require(
                runs.firstIndex { $0.arguments.contains(invocation) }, "\(stage.image): no \(invocation)")
            let vips = try #require(runs.firstIndex { $0.arguments.contains("libvips") })
            #expect(
                heif < vips
                    || runs[heif].arguments.range(of: invocation)!.lowerBound
                        < runs[heif].arguments.range(of: "libvips")!.lowerBound,
                "\(stage.image): libheif 1.19 must be in place before libvips is installed")
        }
        // The script is the one place that states the version and why (docs/DEVELOPMENT.md links it).
        let script = try Repo.text("scripts/dev/install-libheif.sh")
        #expect(script.contains("want_min=\"1.19\""))
        #expect(script.contains("Too many auxiliary image references"))
    }

    @Test("the runtime stage installs runtime libraries only")
    func runtimePackages() throws {
        let installs = runtime.all("RUN").map(\.arguments).joined(separator: " ")
        for package in [
            "libvips42", "libdeflate0", "libwebp7", "libwebpmux3", "liblcms2-2", "libpq5", "libssl3", "libsasl2-2",
            "libzstd1", "liblz4-1", "zlib1g", "ca-certificates",
        ] {
            #expect(installs.contains(" \(package) ") || installs.hasSuffix(" \(package)"), "missing \(package)")
        }
        let words = installs.split(separator: " ")
        // S3 goes over async-http-client, so nothing links Foundation's networking (and libcurl through it).
        #expect(!words.contains { $0.hasPrefix("libcurl") }, "no libcurl in the runtime image")
        #expect(!words.contains { $0.hasSuffix("-dev") }, "no -dev packages in the runtime image")
        #expect(!words.contains("swift"), "no toolchain in the runtime image")
        #expect(installs.contains("--no-install-recommends"))
        #expect(installs.contains("rm -rf /var/lib/apt/lists"))
    }

    /// docs/FORMATS.md, "The runtime image": OpenCV's libglx0 dependency is met by a stand-in for libglx-mesa0,
    /// installed before any package that would pull Mesa, LLVM and z3 in (scripts/check-runtime-stage.sh proves the
    /// resolved set and the face detector in it).
    @Test("the runtime stage installs the stand-in for Mesa's GLX library before OpenCV, and no GPU stack by name")
    func noGPUStack() throws {
        let runs = runtime.all("RUN").map(\.arguments)
        let install = try #require(runs.first { $0.contains("libopencv-core406") })
        let standIn = try #require(install.range(of: "dpkg -i /tmp/install/no-gpu-stack.deb"))
        #expect(standIn.lowerBound < install.range(of: "apt-get -q install")!.lowerBound)
        #expect(runtime.all("COPY").contains { $0.arguments.hasPrefix("deploy/no-gpu-stack ") })
        let control = try Repo.text("deploy/no-gpu-stack/DEBIAN/control")
        #expect(control.contains("\nProvides: libglx-mesa0\n") && control.contains("\nArchitecture: all\n"))
        let words = install.split(separator: " ")
        #expect(!words.contains { $0.contains("mesa") || $0.hasPrefix("libllvm") || $0.hasPrefix("libz3") })
        // The build stage's libheif script installs the AV1 encoder plugin the AVIF avatars need, both stages.
        #expect(try Repo.text("scripts/dev/install-libheif.sh").contains("libheif-plugin-aomenc"))
    }

    @Test("runs as a non-root numeric user")
    func nonRoot() throws {
        let user = try #require(runtime.last("USER"), "the runtime stage needs USER")
        let uid = try #require(Int(user.arguments.split(separator: ":")[0]), "USER should be numeric for runAsNonRoot")
        #expect(uid >= 10000)
        let creates = runtime.all("RUN").map(\.arguments).joined(separator: " ")
        #expect(creates.contains("--uid \(uid)"), "the image should create the user \(uid)")
        // The user must be in force when the process starts: no instruction after it switches back.
        let afterUser = runtime.instructions.drop { $0.line != user.line }.dropFirst()
        #expect(!afterUser.contains { $0.keyword == "USER" || $0.keyword == "RUN" })
    }

    @Test("HEALTHCHECK probes /healthz with the shipped script")
    func healthcheck() throws {
        let check = try #require(runtime.last("HEALTHCHECK"))
        #expect(check.arguments.contains("CMD"))
        #expect(check.arguments.contains("/healthz"))
        #expect(check.arguments.contains("--timeout="))
        let script = try #require(
            Dockerfile.execForm(
                String(check.arguments[check.arguments.range(of: "CMD")!.upperBound...])
                    .trimmingCharacters(in: .whitespaces))?.first)
        let copy = try #require(
            runtime.all("COPY").first { $0.arguments.hasSuffix(" " + script) },
            "the HEALTHCHECK program must be copied into the image")
        #expect(copy.arguments.contains(Deploy.healthcheckPath))
    }

    @Test("the health check script targets the worker's default port and succeeds only on 200")
    func healthcheckScript() throws {
        let script = try Repo.text(Deploy.healthcheckPath)
        #expect(script.hasPrefix("#!/bin/bash"), "/dev/tcp is a bash feature")
        #expect(script.contains("/dev/tcp/127.0.0.1/"))
        #expect(script.contains("AVATAR_HTTP_PORT"))
        #expect(script.contains("http\\.port"), "reads http.port from the AVATAR_CONFIG file too")
        let defaultPort = try #require(ConfigurationKey.httpPort.defaultValue)
        #expect(script.contains("port=${port:-\(defaultPort)}"))
        #expect(script.contains("= 200 ]"))
        let attributes = try FileManager.default.attributesOfItem(atPath: Repo.url(Deploy.healthcheckPath).path)
        let permissions = try #require(attributes[.posixPermissions] as? Int)
        #expect(permissions & 0o111 != 0, "COPY keeps the mode: the script must be executable in Git")
    }

    @Test("starts `avatar-cropper worker` by default; migrations ship in the image")
    func entrypoint() throws {
        let entrypoint = try #require(runtime.last("ENTRYPOINT").flatMap { Dockerfile.execForm($0.arguments) })
        #expect(entrypoint.count == 1)
        #expect(entrypoint.first?.hasSuffix("avatar-cropper") == true)
        #expect(runtime.last("CMD").flatMap { Dockerfile.execForm($0.arguments) } == ["worker"])
        let copies = runtime.all("COPY").map(\.arguments)
        #expect(copies.contains { $0.contains("--from=") && $0.contains("avatar-cropper") })
        let migrations = try #require(copies.first { $0.hasPrefix("migrations ") })
        let target = String(migrations.split(separator: " ").last!)
        let environment = runtime.all("ENV").map(\.arguments)
        #expect(environment.contains("\(ConfigurationKey.migrationsDirectory.environmentName)=\(target)"))
        #expect(runtime.all("EXPOSE").map(\.arguments).contains(ConfigurationKey.httpPort.defaultValue!))
    }

    @Test("everything COPY takes from the context exists and is not filtered out by the .dockerignore")
    func contextSources() throws {
        let ignore = try DockerIgnore(text: try Repo.text(Deploy.dockerignorePath))
        let sources = dockerfile.instructions.flatMap(Dockerfile.contextSources)
        #expect(sources.count >= 4)
        for source in sources where source != "." {
            #expect(Repo.exists(source), "COPY \(source): no such file in the repository")
            #expect(!ignore.excludes(Repo.normalise(source)), "COPY \(source) is excluded by the .dockerignore")
        }
        // What swift build needs stays in; local build outputs and services stay out.
        for needed in [
            "Package.swift", "Sources/AvatarWorker/LogKey.swift", "Tests/DeployTests", "proto",
            "migrations/0001_profiles.sql", "scripts/dev/build-librdkafka.sh", "scripts/fetch-face-model.sh",
        ] {
            #expect(!ignore.excludes(needed), "\(needed) must stay in the build context")
        }
        for unwanted in [
            ".build", ".build/debug/avatar-cropper", ".deps/librdkafka", ".run/env", ".git/HEAD",
            "deploy/compose.yaml", "out/demo", "bench/Sources/avatar-bench/main.swift",
        ] {
            #expect(ignore.excludes(unwanted), "\(unwanted) should be left out of the build context")
        }
    }

    @Test("the .dockerignore matcher itself: exclusions, re-inclusions, wildcards")
    func dockerignoreMatcher() throws {
        let ignore = try DockerIgnore(text: "# comment\nbuild\n.build-*\n**/__pycache__\ndocs\n!docs/keep.md\n")
        #expect(ignore.excludes("build/x"))
        #expect(ignore.excludes(".build-release/y"))
        #expect(ignore.excludes("a/b/__pycache__/c.pyc"))
        #expect(ignore.excludes("docs/other.md"))
        #expect(!ignore.excludes("docs/keep.md"))
        #expect(!ignore.excludes("buildings"))
        #expect(!ignore.excludes("Sources/build.swift"))
    }
}
