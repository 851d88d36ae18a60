import AvatarWorker
import Foundation
import Testing

@Suite("Kubernetes manifests (deploy/kubernetes)")
struct KubernetesTests {
    let objects: [Deploy.KubernetesObject]
    let deployment: [String: Any]
    let podSpec: [String: Any]
    let container: [String: Any]
    let configuration: ConfigurationValues

    init() throws {
        objects = try Deploy.kubernetesObjects()
        deployment = try Deploy.kubernetesObject(kind: "Deployment", name: "avatar-cropper")
        podSpec = try #require(deployment.map(path: "spec.template.spec"))
        let containers = try #require(podSpec.list("containers")).compactMap { $0 as? [String: Any] }
        container = try #require(containers.first { $0.string("name") == "worker" })
        configuration = try Deploy.kubernetesConfiguration(lenient: true)
    }

    func object(_ kind: String) throws -> [String: Any] {
        let matches = objects.filter { $0.kind == kind }
        try #require(matches.count == 1, "expected one \(kind), found \(matches.count)")
        return matches[0].object
    }

    func containers(of spec: [String: Any]) -> [[String: Any]] {
        ((spec.list("containers") ?? []) + (spec.list("initContainers") ?? [])).compactMap { $0 as? [String: Any] }
    }

    func environment(_ container: [String: Any]) -> [[String: Any]] {
        (container.list("env") ?? []).compactMap { $0 as? [String: Any] }
    }

    /// Every item of every Secret volume a container of `spec` mounts: (mount path, Secret, key, file name).
    func secretItems(_ spec: [String: Any]) -> [(String, (secret: String, key: String, path: String))] {
        let volumes = (spec.list("volumes") ?? []).compactMap { $0 as? [String: Any] }
        var items: [(String, (secret: String, key: String, path: String))] = []
        for container in containers(of: spec) {
            for mount in (container.list("volumeMounts") ?? []).compactMap({ $0 as? [String: Any] }) {
                guard let volume = volumes.first(where: { $0.string("name") == mount.string("name") }),
                    let secret = volume.map("secret"), let mountPath = mount.string("mountPath")
                else { continue }
                for item in (secret.list("items") ?? []).compactMap({ $0 as? [String: Any] }) {
                    items.append(
                        (
                            mountPath,
                            (secret.string("secretName") ?? "", item.string("key") ?? "", item.string("path") ?? "")
                        ))
                }
            }
        }
        return items
    }

    /// Where AVATAR_SECRETS_DIR points in the pod's first container that sets it.
    func secretsDirectory(_ spec: [String: Any]) -> String? {
        for container in containers(of: spec) {
            if let value = environment(container).first(where: {
                $0.string("name") == ConfigurationValues.secretsDirectoryVariable
            })?.string("value") {
                return value
            }
        }
        return nil
    }

    @Test("the kustomization lists every manifest but the Secret example, and each object names its namespace")
    func kustomization() throws {
        let kustomization = try YAMLFile.mapping(Deploy.kubernetesFolder + "/kustomization.yaml")
        let namespace = try #require(kustomization.string("namespace"))
        let resources = Set(try #require(kustomization.list("resources")).compactMap(scalarText))
        let manifests = Set(
            Repo.files(under: Deploy.kubernetesFolder).map { ($0 as NSString).lastPathComponent }
                .filter { $0.hasSuffix(".yaml") && $0 != "kustomization.yaml" })
        #expect(resources == manifests.subtracting(["secret.example.yaml"]))
        #expect(!resources.contains("secret.example.yaml"), "applying placeholders would overwrite the real Secret")
        for object in objects where object.kind != "Namespace" {
            #expect(object.object.map("metadata")?.string("namespace") == namespace, "\(object.kind) \(object.name)")
        }
        #expect(objects.contains { $0.kind == "Namespace" && $0.name == namespace })
        let images = try #require(kustomization.list("images")?.first as? [String: Any])
        #expect(images.string("name") == container.string("image")?.split(separator: ":").first.map(String.init))
    }

    @Test("every object has apiVersion, kind and metadata.name")
    func wellFormed() throws {
        #expect(objects.count >= 9)
        for object in objects {
            #expect(object.object.string("apiVersion") != nil, "\(object.file)")
            #expect(!object.kind.isEmpty && !object.name.isEmpty, "\(object.file)")
        }
    }

    @Test("probes: liveness and startup on /healthz, readiness on /readyz, on the port the worker serves")
    func probes() throws {
        let ports = (container.list("ports") ?? []).compactMap { $0 as? [String: Any] }
        let httpPort = try #require(try configuration.int(.httpPort))
        let named = try #require(ports.first { $0.int("containerPort") == httpPort }, "no containerPort \(httpPort)")
        func check(_ probe: String, path: String) throws {
            let get = try #require(container.map(probe)?.map("httpGet"), "\(probe) needs httpGet")
            #expect(get.string("path") == path, "\(probe)")
            let port = try #require(get.string("port"))
            #expect(port == named.string("name") || Int(port) == httpPort, "\(probe) port \(port)")
        }
        try check("livenessProbe", path: "/healthz")
        try check("readinessProbe", path: "/readyz")
        try check("startupProbe", path: "/healthz")
        let annotations = try #require(deployment.map(path: "spec.template.metadata")?.map("annotations"))
        #expect(annotations.int("prometheus.io/port") == httpPort)
        #expect(annotations.string("prometheus.io/path") == "/metrics")
    }

    @Test("memory limit >= worker.memory-budget-mb + the stated overhead; requests set; CPU covers the pool")
    func resources() throws {
        let resources = try #require(container.map("resources"))
        let limits = try #require(resources.map("limits"))
        let requests = try #require(resources.map("requests"))
        let limit = try #require(limits.string("memory").flatMap(Quantity.kubernetesBytes))
        let required = try MemoryRule.requiredMiB(configuration)
        #expect(limit >= Double(required) * 1_048_576, "memory limit below \(required) MiB")
        let request = try #require(requests.string("memory").flatMap(Quantity.kubernetesBytes))
        #expect(request == limit, "memory request = limit: no eviction for exceeding the request")
        let renderSlots = try #require(try configuration.int(.renderSlots))
        let cpu = try #require((limits.string("cpu") ?? requests.string("cpu")).flatMap(Quantity.cores))
        #expect(cpu >= Double(renderSlots), "one core per render thread")
    }

    @Test(
        "the memory rule itself: budget + 256 MiB + 48 MiB x (render-slots + 1) + image.max-mb x (2 x render-slots + jobs-in-flight)"
    )
    func memoryRule() throws {
        #expect(MemoryRule.requiredMiB(budgetMB: 1024, maxImageMB: 40, renderSlots: 2, jobsInFlight: 4) == 1744)
        let defaults = try ConfigurationValues(file: "worker.render-slots = 2\nworker.memory-budget-mb = 1024\n")
        #expect(try MemoryRule.requiredMiB(defaults) == 1744, "jobs in flight default to twice the pool width")
        let tooSmall = try ConfigurationValues(file: "worker.render-slots = 8\nworker.memory-budget-mb = 1400\n")
        #expect(try MemoryRule.requiredMiB(tooSmall) > 1792, "the Deployment's limit would not hold this")
        let unset = try ConfigurationValues(file: "worker.memory-budget-mb = 512\n")
        #expect(throws: DeployFileError.self) { try MemoryRule.requiredMiB(unset) }
    }

    @Test("termination grace outlasts worker.drain-seconds")
    func gracePeriod() throws {
        let drain = try #require(try configuration.int(.drainSeconds))
        let grace = try #require(podSpec.int("terminationGracePeriodSeconds"))
        #expect(grace > drain + 5, "SIGKILL must not cut the drain, the final commit or the group leave short")
    }

    @Test("non-root, read-only root filesystem with an emptyDir /tmp, restricted pod security")
    func security() throws {
        let dockerUser = try #require(try Deploy.dockerfile().stages.last?.last("USER"))
        let uid = Int(dockerUser.arguments.split(separator: ":")[0])
        for (place, spec) in try Deploy.podSpecs() {
            let pod = try #require(spec.map("securityContext"), "\(place) needs a pod securityContext")
            #expect(pod["runAsNonRoot"] as? Bool == true, "\(place)")
            #expect(pod.int("runAsUser") == uid, "\(place): runAsUser should be the image's USER")
            #expect(pod.map("seccompProfile")?.string("type") == "RuntimeDefault", "\(place)")
            #expect(spec["automountServiceAccountToken"] as? Bool == false, "\(place): needs no API access")
            for container in containers(of: spec) {
                let context = try #require(container.map("securityContext"), "\(place) container")
                #expect(context["allowPrivilegeEscalation"] as? Bool == false, "\(place)")
                #expect(context["readOnlyRootFilesystem"] as? Bool == true, "\(place)")
                #expect(context.map("capabilities")?.list("drop")?.compactMap(scalarText) == ["ALL"], "\(place)")
                #expect(context["privileged"] as? Bool != true, "\(place)")
            }
        }
        let mounts = (container.list("volumeMounts") ?? []).compactMap { $0 as? [String: Any] }
        let tmp = try #require(mounts.first { $0.string("mountPath") == "/tmp" }, "the worker needs a writable /tmp")
        let volumes = (podSpec.list("volumes") ?? []).compactMap { $0 as? [String: Any] }
        let volume = try #require(volumes.first { $0.string("name") == tmp.string("name") })
        #expect(volume.map("emptyDir") != nil)
        let namespace = try object("Namespace")
        #expect(namespace.map("metadata")?.map("labels")?.string("pod-security.kubernetes.io/enforce") == "restricted")
    }

    @Test("the config file is mounted where AVATAR_CONFIG points, in every pod that reads it")
    func configMount() throws {
        for (place, spec) in try Deploy.podSpecs() {
            let volumes = (spec.list("volumes") ?? []).compactMap { $0 as? [String: Any] }
            for container in containers(of: spec) {
                guard
                    let path = environment(container).first(where: { $0.string("name") == "AVATAR_CONFIG" })?
                        .string("value")
                else { continue }
                let folder = (path as NSString).deletingLastPathComponent
                let mounts = (container.list("volumeMounts") ?? []).compactMap { $0 as? [String: Any] }
                let mount = try #require(mounts.first { $0.string("mountPath") == folder }, "\(place): \(folder)")
                let volume = try #require(volumes.first { $0.string("name") == mount.string("name") })
                #expect(volume.map("configMap")?.string("name") == Deploy.configMapName, "\(place)")
                #expect((path as NSString).lastPathComponent == Deploy.configFileName, "\(place)")
            }
        }
        #expect(environment(container).contains { $0.string("name") == "AVATAR_CONFIG" })
    }

    @Test("secrets come only from the Secret, by keys the example declares")
    func secrets() throws {
        let example = try YAMLFile.mapping(Deploy.secretExamplePath)
        let secretName = try #require(example.map("metadata")?.string("name"))
        let keys = Set(try #require(example.map("stringData")).keys)
        for value in try #require(example.map("stringData")).values.compactMap(scalarText)
        where !value.contains("REPLACE_ME") {
            #expect(!value.contains(":") || !value.contains("@"), "the example must not carry a real credential")
        }
        var references = 0
        let secretNames = ["PASSWORD", "SECRET", "DATABASE_URL", "ACCESS_KEY"]
        for (place, spec) in try Deploy.podSpecs() {
            for container in containers(of: spec) {
                for variable in environment(container) {
                    let name = variable.string("name") ?? ""
                    if variable.map("valueFrom")?.map("secretKeyRef") != nil {
                        Issue.record("\(place): \(name) puts a secret in the environment; mount the Secret as files")
                    } else if name != ConfigurationValues.secretsDirectoryVariable,
                        secretNames.contains(where: { name.contains($0) })
                    {
                        Issue.record("\(place): \(name) is a literal; take it from the Secret")
                    }
                }
            }
            for (path, item) in secretItems(spec) {
                #expect(keys.contains(item.key), "\(place) \(item.path): \(item.key) is not in the example")
                #expect(item.secret == secretName, "\(place)")
                #expect(ConfigurationValues.isKnown(item.path), "\(place): \(item.path) is not a configuration key")
                #expect(path == secretsDirectory(spec), "\(place): mounted where AVATAR_SECRETS_DIR points")
                references += 1
            }
        }
        #expect(references >= 8)
        let trigger = try object("TriggerAuthentication")
        for entry in (trigger.map("spec")?.list("secretTargetRef") ?? []).compactMap({ $0 as? [String: Any] }) {
            #expect(entry.string("name") == secretName)
            #expect(keys.contains(entry.string("key") ?? ""))
        }
        let configured = Set(ConfigurationAudit.fileSettings(try Deploy.kubernetesConfigFile(), source: "").map(\.name))
        for key in [
            "database.url", "storage.s3.access-key-id", "storage.s3.secret-access-key",
            "kafka.property.sasl.username", "kafka.property.sasl.password",
        ] {
            #expect(!configured.contains(key), "\(key) belongs in the Secret, not the ConfigMap")
        }
    }

    @Test("the PodDisruptionBudget selects the Deployment's pods and keeps one running")
    func podDisruptionBudget() throws {
        let budget = try object("PodDisruptionBudget")
        let selector = try #require(budget.map(path: "spec.selector")?.map("matchLabels"))
        let podLabels = try #require(deployment.map(path: "spec.template.metadata")?.map("labels"))
        let deploymentSelector = try #require(deployment.map(path: "spec.selector")?.map("matchLabels"))
        #expect(!selector.isEmpty)
        for (key, value) in selector {
            #expect(podLabels.string(key) == scalarText(value), "PDB label \(key) does not select the worker pods")
        }
        #expect(selector.mapValues(scalarText) == deploymentSelector.mapValues(scalarText))
        #expect(
            budget.map("spec")?.string("unhealthyPodEvictionPolicy") == "AlwaysAllow",
            "an outage makes every pod unready; node drains must still evict them")
        let minimum = try #require(try object("ScaledObject").map("spec")?.int("minReplicaCount"))
        if let unavailable = budget.map("spec")?.int("maxUnavailable") {
            #expect(unavailable >= 1 && unavailable < minimum, "drains must proceed, and one worker must stay")
        } else {
            let available = try #require(budget.map("spec")?.int("minAvailable"))
            #expect(available >= 1 && available < minimum, "minAvailable >= replicas would block every drain")
        }
    }

    /// docs/ARCHITECTURE.md §7: only the scraper reaches the HTTP port (the kubelet's probes are node
    /// traffic, which Kubernetes always allows); everything else is denied by the policy.
    @Test("the NetworkPolicy admits only a selected scraper, on the HTTP port, to the worker pods")
    func networkPolicy() throws {
        let policy = try object("NetworkPolicy")
        let spec = try #require(policy.map("spec"))
        let selector = try #require(spec.map("podSelector")?.map("matchLabels"))
        let podLabels = try #require(deployment.map(path: "spec.template.metadata")?.map("labels"))
        #expect(!selector.isEmpty)
        for (key, value) in selector {
            #expect(podLabels.string(key) == scalarText(value), "policy label \(key) does not select the worker pods")
        }
        #expect((spec.list("policyTypes") ?? []).compactMap(scalarText).contains("Ingress"))
        let rules = (spec.list("ingress") ?? []).compactMap { $0 as? [String: Any] }
        #expect(rules.count == 1)
        let ports = (container.list("ports") ?? []).compactMap { $0 as? [String: Any] }
        let http = try #require(ports.first { $0.string("name") == "http" })
        for rule in rules {
            let allowed = (rule.list("ports") ?? []).compactMap { $0 as? [String: Any] }.compactMap {
                $0.string("port")
            }
            #expect(!allowed.isEmpty && allowed.allSatisfy { $0 == "http" || $0 == http.string("containerPort") })
            // An empty `from` admits everyone; each peer must select pods or namespaces by label.
            let peers = (rule.list("from") ?? []).compactMap { $0 as? [String: Any] }
            #expect(!peers.isEmpty)
            for peer in peers {
                #expect(peer.map("ipBlock") == nil, "an address block is not a scraper")
                let labels =
                    (peer.map("podSelector")?.map("matchLabels") ?? [:]).count
                    + (peer.map("namespaceSelector")?.map("matchLabels") ?? [:]).count
                #expect(labels > 0, "a peer without labels selects every pod")
            }
        }
    }

    @Test("a rolling update never runs more workers than partitions (a worker without one is never ready)")
    func rollingUpdate() throws {
        let strategy = try #require(deployment.map(path: "spec.strategy.rollingUpdate"))
        let surge = try #require(strategy.int("maxSurge"), "maxSurge as a number of pods")
        let maximum = try #require(try object("ScaledObject").map("spec")?.int("maxReplicaCount"))
        #expect(maximum + surge <= (try requestPartitions()), "a surge pod at maxReplicaCount would stall the rollout")
        #expect(strategy.int("maxUnavailable") == 1, "one worker at a time: one departure, one rebalance")
    }

    /// The partitions `topics-job.yaml` creates.
    func requestPartitions() throws -> Int {
        let topicsJob = try Deploy.kubernetesObject(kind: "Job", name: "avatar-cropper-topics")
        let topicsSpec = try #require(topicsJob.map(path: "spec.template.spec"))
        let topics = try #require(containers(of: topicsSpec).first)
        let arguments = ConfigurationAudit.words(topics["args"] ?? [])
        #expect(arguments.first == "topics")
        let index = try #require(arguments.firstIndex(of: "--partitions"))
        return try #require(Int(arguments[index + 1]))
    }

    @Test("the autoscaler targets the Deployment and watches the configured topic, group and brokers")
    func autoscaler() throws {
        let scaled = try object("ScaledObject")
        let spec = try #require(scaled.map("spec"))
        let target = try #require(spec.map("scaleTargetRef"))
        #expect(target.string("name") == deployment.map("metadata")?.string("name"))
        #expect((target.string("kind") ?? "Deployment") == "Deployment")
        let trigger = try #require(spec.list("triggers")?.first as? [String: Any])
        #expect(trigger.string("type") == "kafka")
        let metadata = try #require(trigger.map("metadata"))
        #expect(metadata.string("topic") == (try configuration.require(.topicRequests)))
        #expect(metadata.string("consumerGroup") == (try configuration.require(.kafkaGroupID)))
        #expect(metadata.string("bootstrapServers") == (try configuration.require(.kafkaBrokers)))
        #expect(metadata.int("lagThreshold").map { $0 > 0 } == true)
        #expect(metadata.string("allowIdleConsumers") == "false")

        // TLS and SASL as the worker's librdkafka settings say.
        let properties = configuration.kafkaProperties
        let protocolName = properties["security.protocol"]?.uppercased() ?? "PLAINTEXT"
        #expect((metadata.string("tls") == "enable") == protocolName.hasSuffix("SSL"))
        // KEDA's names for librdkafka's sasl.mechanisms.
        let kedaMechanisms = ["PLAIN": "plaintext", "SCRAM-SHA-256": "scram_sha256", "SCRAM-SHA-512": "scram_sha512"]
        let mechanism = properties["sasl.mechanisms"].map { kedaMechanisms[$0.uppercased()] ?? "?" }
        #expect(metadata.string("sasl") == mechanism)
        let authentication = try #require(trigger.map("authenticationRef")?.string("name"))
        #expect(authentication == (try object("TriggerAuthentication")).map("metadata")?.string("name"))
    }

    @Test("maxReplicaCount does not exceed the requests topic's partitions")
    func replicasWithinPartitions() throws {
        let spec = try #require(try object("ScaledObject").map("spec"))
        let maximum = try #require(spec.int("maxReplicaCount"))
        let minimum = try #require(spec.int("minReplicaCount"))
        let partitions = try requestPartitions()
        #expect(maximum <= partitions, "workers beyond \(partitions) partitions would sit idle")
        #expect(minimum >= 1 && minimum <= maximum)
        #expect(
            deployment.map("spec")?["replicas"] == nil,
            "the ScaledObject owns the count: a `replicas` here would reset it on every apply")
    }

    @Test("the migration Job runs `migrate` once per release as the schema owner")
    func migrationJob() throws {
        let job = try Deploy.kubernetesObject(kind: "Job", name: "avatar-cropper-migrate")
        let spec = try #require(job.map(path: "spec.template.spec"))
        #expect(spec.string("restartPolicy") == "Never")
        #expect(job.map("spec")?.int("backoffLimit") != nil)
        let migrate = try #require(containers(of: spec).first)
        #expect(ConfigurationAudit.words(migrate["args"] ?? []) == ["migrate"])
        #expect(migrate.string("image") == container.string("image"), "migrations come from the worker's image")
        let database = try #require(secretItems(spec).first { $0.1.path == "database.url" }?.1.key)
        let workerDatabase = try #require(secretItems(podSpec).first { $0.1.path == "database.url" }?.1.key)
        #expect(
            database != workerDatabase,
            "the worker's role cannot create tables; migrations run as the owner")
    }
}
