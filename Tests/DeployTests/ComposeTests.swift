import AvatarWorker
import Foundation
import Testing

@Suite("Local stack (deploy/compose.yaml)")
struct ComposeTests {
    let compose: [String: Any]
    let services: [String: Any]

    init() throws {
        compose = try Deploy.compose()
        services = try #require(compose.map("services"))
    }

    func service(_ name: String) throws -> [String: Any] {
        try #require(services.map(name), "no service \(name)")
    }

    /// `depends_on` as name → condition (list form means service_started).
    func dependencies(_ name: String) throws -> [String: String] {
        let service = try service(name)
        if let list = service.list("depends_on") {
            return Dictionary(uniqueKeysWithValues: list.compactMap(scalarText).map { ($0, "service_started") })
        }
        var result: [String: String] = [:]
        for (dependency, value) in service.map("depends_on") ?? [:] {
            result[dependency] = (value as? [String: Any])?.string("condition") ?? "service_started"
        }
        return result
    }

    @Test("has the whole stack: Kafka, Postgres, S3, the setup one-shots, the worker, Prometheus, Grafana")
    func servicesPresent() throws {
        for name in [
            "kafka", "postgres", "minio", "storage-init", "topics", "migrate", "db-roles", "worker",
            "prometheus", "grafana",
        ] {
            #expect(services[name] != nil, "missing service \(name)")
        }
        #expect(try service("postgres").string("image")?.hasPrefix("postgres:15") == true)
    }

    @Test("Kafka runs in KRaft mode as broker and controller, with topic auto-creation off")
    func kafkaKRaft() throws {
        let kafka = try service("kafka")
        #expect(kafka.string("image")?.hasPrefix("apache/kafka:") == true)
        let environment = Deploy.composeEnvironment(kafka)
        let roles = Set((environment["KAFKA_PROCESS_ROLES"] ?? "").split(separator: ",").map(String.init))
        #expect(roles == ["broker", "controller"])
        #expect(environment["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "\(environment["KAFKA_NODE_ID"] ?? "?")@kafka:9093")
        #expect(environment["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false")
        #expect(environment["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1", "one broker: group offsets need RF 1")
        let clusterID = try #require(environment["CLUSTER_ID"])
        #expect(clusterID.count == 22, "CLUSTER_ID is a base64url UUID (22 characters)")
        #expect(environment["KAFKA_ZOOKEEPER_CONNECT"] == nil)
        #expect(kafka.map("healthcheck") != nil)
    }

    @Test("the worker depends on healthy Kafka, Postgres and storage, and on finished setup")
    func workerDependencies() throws {
        let worker = try dependencies("worker")
        for name in ["kafka", "postgres", "minio"] {
            #expect(worker[name] == "service_healthy", "worker should wait for a healthy \(name)")
            #expect(try service(name).map("healthcheck") != nil, "\(name) needs a healthcheck to be waited on")
        }
        for name in ["topics", "storage-init", "db-roles"] {
            #expect(worker[name] == "service_completed_successfully", "worker should wait for \(name) to finish")
        }
        // The migrations run before the worker's role may log in, so before the worker.
        #expect(try dependencies("db-roles")["migrate"] == "service_completed_successfully")
        #expect(try dependencies("migrate")["postgres"] == "service_healthy")
        #expect(try dependencies("topics")["kafka"] == "service_healthy")
    }

    @Test("every depends_on names an existing service, and there is no cycle")
    func dependencyGraph() throws {
        var visiting: Set<String> = []
        var done: Set<String> = []
        func visit(_ name: String) throws {
            if done.contains(name) { return }
            #expect(!visiting.contains(name), "dependency cycle through \(name)")
            if visiting.contains(name) { return }
            visiting.insert(name)
            for dependency in try dependencies(name).keys {
                #expect(services[dependency] != nil, "\(name) depends on unknown service \(dependency)")
                if services[dependency] != nil { try visit(dependency) }
            }
            visiting.remove(name)
            done.insert(name)
        }
        for name in services.keys { try visit(name) }
    }

    @Test("the one-shot services run the CLI's topics and migrate subcommands from the worker image")
    func oneShots() throws {
        let worker = try service("worker")
        let image = try #require(worker.string("image"))
        let topics = try service("topics")
        let migrate = try service("migrate")
        #expect(topics.string("image") == image && migrate.string("image") == image)
        #expect(ConfigurationAudit.words(topics["command"] ?? "").first == "topics")
        #expect(ConfigurationAudit.words(topics["command"] ?? "").contains("--partitions"))
        #expect(ConfigurationAudit.words(migrate["command"] ?? "") == ["migrate"])
        for name in ["topics", "migrate"] {
            #expect(
                try service(name).map("healthcheck")?["disable"] as? Bool == true,
                "\(name) exits: the image's worker health check does not apply")
        }
        let roles = ConfigurationAudit.words(try service("db-roles")["command"] ?? "").joined(separator: " ")
        #expect(roles.contains("ALTER ROLE avatar_worker LOGIN"), "migrations/0003 creates avatar_worker NOLOGIN")
    }

    @Test("services running the worker image build it from deploy/Dockerfile with the repository as context")
    func build() throws {
        let image = try #require(try service("worker").string("image"))
        for (name, value) in services {
            guard let service = value as? [String: Any], service.string("image") == image else { continue }
            let build = try #require(service.map("build"), "\(name) uses \(image) but cannot build it")
            let context = try #require(build.string("context"))
            let dockerfile = try #require(build.string("dockerfile"))
            #expect(Repo.normalise("deploy/" + context + "/" + dockerfile) == Deploy.dockerfilePath)
        }
    }

    @Test("the worker's settings point at the stack's services")
    func workerSettings() throws {
        let values = try Deploy.composeWorkerConfiguration()
        let kafka = Deploy.composeEnvironment(try service("kafka"))
        let advertised = (kafka["KAFKA_ADVERTISED_LISTENERS"] ?? "").split(separator: ",")
            .map { String($0.split(separator: "/").last ?? "") }
        #expect(advertised.contains(try values.require(.kafkaBrokers)), "kafka.brokers must be an advertised listener")
        let database = try #require(URLComponents(string: try values.require(.databaseURL)))
        #expect(database.host == "postgres")
        #expect(database.user == "avatar_worker", "the worker logs in with only the rights it uses")
        let postgres = Deploy.composeEnvironment(try service("postgres"))
        #expect(database.path == "/" + (postgres["POSTGRES_DB"] ?? "?"))
        let storage = try values.require(.storageURL)
        #expect(storage.hasPrefix("s3://"))
        #expect(storage.contains("endpoint=http://minio:9000"))
        #expect(values[.storageAccessKeyID] != nil && values[.storageSecretAccessKey] != nil)
        let bucket = try #require(URLComponents(string: storage)?.host)
        let storageInit = ConfigurationAudit.words(try service("storage-init")["command"] ?? "")
        #expect(storageInit.contains("local/\(bucket)"), "storage-init must create the worker's bucket")
        _ = try WorkerFactory.kafkaConfiguration(values)
        _ = try WorkerFactory.databaseConfiguration(values)
    }

    @Test("stop grace outlasts the drain, and the memory limit holds the budget plus overhead")
    func workerLimits() throws {
        let worker = try service("worker")
        let values = try Deploy.composeWorkerConfiguration()
        let drain = try #require(try values.int(.drainSeconds))
        let grace = try #require(worker.string("stop_grace_period").flatMap(Quantity.composeSeconds))
        #expect(grace > Double(drain), "SIGKILL would cut the drain short (compose's default is 10 s)")
        let limit = try #require(worker.string("mem_limit").flatMap(Quantity.composeBytes))
        let required = try MemoryRule.requiredMiB(values)
        #expect(limit >= Double(required) * 1_048_576, "mem_limit below \(required) MiB")
    }

    @Test("Prometheus scrapes every worker's /metrics and loads the alert rules")
    func prometheus() throws {
        let prometheus = try service("prometheus")
        let mounts = try bindMounts(prometheus)
        let configMount = try #require(mounts.first { $0.target == "/etc/prometheus/prometheus.yml" })
        let config = try YAMLFile.mapping(configMount.source)
        let jobs = try #require(config.list("scrape_configs")).compactMap { $0 as? [String: Any] }
        let job = try #require(jobs.first { $0.list("dns_sd_configs") != nil || $0.list("static_configs") != nil })
        #expect(job.string("metrics_path") == "/metrics")
        let discovery = try #require(job.list("dns_sd_configs")?.first as? [String: Any])
        #expect(discovery.list("names")?.compactMap(scalarText) == ["worker"], "DNS finds every scaled replica")
        let port = try Deploy.composeWorkerConfiguration().int(.httpPort)
        #expect(discovery.int("port") == port)

        let rules = try #require(mounts.first { $0.source.hasSuffix("dashboards/alerts.rules.yml") })
        let patterns = try #require(config.list("rule_files")).compactMap(scalarText)
        #expect(
            patterns.contains { pattern in
                let folder = (pattern as NSString).deletingLastPathComponent
                let name = (pattern as NSString).lastPathComponent
                return (rules.target as NSString).deletingLastPathComponent == folder
                    && (name == "*.yml" || name == (rules.target as NSString).lastPathComponent)
            }, "rule_files must match where the alert rules are mounted")
    }

    @Test("Grafana provisions the Prometheus data source and the avatar-cropper dashboard")
    func grafana() throws {
        let grafana = try service("grafana")
        let mounts = try bindMounts(grafana)
        let provisioning = try #require(mounts.first { $0.target == "/etc/grafana/provisioning" })
        #expect(Repo.isDirectory(provisioning.source))

        let datasourceFiles = Repo.files(under: provisioning.source + "/datasources")
        let datasources = try datasourceFiles.flatMap { try YAMLFile.mapping($0).list("datasources") ?? [] }
            .compactMap { $0 as? [String: Any] }
        let prometheus = try #require(datasources.first { $0.string("type") == "prometheus" })
        #expect(prometheus.string("url") == "http://prometheus:9090")
        #expect(prometheus.string("uid") != nil, "the dashboard refers to the data source by uid")

        let dashboardMount = try #require(
            mounts.first { $0.source.hasSuffix("dashboards/avatar-cropper.grafana.json") })
        let providers = try Repo.files(under: provisioning.source + "/dashboards")
            .flatMap { try YAMLFile.mapping($0).list("providers") ?? [] }.compactMap { $0 as? [String: Any] }
        let provider = try #require(providers.first)
        let folder = try #require(provider.map("options")?.string("path"))
        #expect(
            (dashboardMount.target as NSString).deletingLastPathComponent == folder,
            "the provider must read the folder the dashboard is mounted in")
        let home = Deploy.composeEnvironment(grafana)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
        #expect(home == nil || home == dashboardMount.target)
    }

    @Test("every bind-mounted file or folder exists (dashboards/ once the telemetry work has landed)")
    func bindMountSources() throws {
        var checked = 0
        for (name, value) in services {
            guard let service = value as? [String: Any] else { continue }
            for mount in try bindMounts(service) {
                if mount.source.hasPrefix("dashboards/") && !Repo.isDirectory("dashboards") { continue }
                #expect(Repo.exists(mount.source), "\(name) mounts \(mount.source), which does not exist")
                checked += 1
            }
        }
        #expect(checked >= 2)
    }

    /// The bind mounts of a service (short syntax `./src:/target[:ro]`), sources made repository-relative.
    func bindMounts(_ service: [String: Any]) throws -> [(source: String, target: String)] {
        (service.list("volumes") ?? []).compactMap(scalarText).compactMap { volume in
            let parts = volume.split(separator: ":").map(String.init)
            guard parts.count >= 2, parts[0].hasPrefix(".") || parts[0].hasPrefix("/") else { return nil }
            return (Repo.normalise("deploy/" + parts[0]), parts[1])
        }
    }
}
