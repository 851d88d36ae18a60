import AvatarWorker
import Foundation

/// The deploy files, parsed.
enum Deploy {
    static let dockerfilePath = "deploy/Dockerfile"
    static let dockerignorePath = "deploy/Dockerfile.dockerignore"
    static let healthcheckPath = "deploy/healthcheck.sh"
    static let composePath = "deploy/compose.yaml"
    static let kubernetesFolder = "deploy/kubernetes"
    static let secretExamplePath = "deploy/kubernetes/secret.example.yaml"

    static func dockerfile() throws -> Dockerfile { Dockerfile(text: try Repo.text(dockerfilePath)) }

    static func compose() throws -> [String: Any] { try YAMLFile.mapping(composePath) }

    static func composeService(_ name: String) throws -> [String: Any] {
        guard let service = try compose().map("services")?.map(name) else {
            throw DeployFileError(description: "compose.yaml has no service \(name)")
        }
        return service
    }

    /// A compose service's `environment:` as name → value (list or mapping form), interpolated as compose
    /// does when none of the `${...}` variables is set.
    static func composeEnvironment(_ service: [String: Any]) -> [String: String] {
        var environment: [String: String] = [:]
        if let mapping = service.map("environment") {
            for (name, value) in mapping { environment[name] = interpolate(scalarText(value) ?? "") }
        } else if let list = service.list("environment") {
            for entry in list.compactMap(scalarText) {
                let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
                environment[parts[0]] = parts.count > 1 ? interpolate(parts[1]) : ""
            }
        }
        return environment
    }

    /// Compose interpolation with no variables set: `${NAME:-default}` / `${NAME-default}` → default,
    /// `${NAME}` / `$NAME` → empty, `$$` → `$`.
    static func interpolate(_ text: String) -> String {
        var result = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            let next = text.index(after: index)
            guard character == "$", next < text.endIndex else {
                result.append(character)
                index = next
                continue
            }
            if text[next] == "$" {
                result.append("$")
                index = text.index(after: next)
            } else if text[next] == "{", let close = text[next...].firstIndex(of: "}") {
                let body = text[text.index(after: next)..<close]
                if let range = body.range(of: ":-") ?? body.range(of: "-") {
                    result += body[range.upperBound...]
                }
                index = text.index(after: close)
            } else {
                var end = next
                while end < text.endIndex, text[end].isLetter || text[end].isNumber || text[end] == "_" {
                    end = text.index(after: end)
                }
                index = end
            }
        }
        return result
    }

    /// One Kubernetes object and the file it came from.
    struct KubernetesObject {
        var file: String
        var object: [String: Any]
        var kind: String { object.string("kind") ?? "" }
        var name: String { object.map("metadata")?.string("name") ?? "" }
    }

    /// Every object of every YAML file in deploy/kubernetes except the kustomization.
    static func kubernetesObjects() throws -> [KubernetesObject] {
        var objects: [KubernetesObject] = []
        for file in Repo.files(under: kubernetesFolder)
        where file.hasSuffix(".yaml") && !file.hasSuffix("/kustomization.yaml") {
            for document in try YAMLFile.documents(file) {
                guard let object = document as? [String: Any] else {
                    throw DeployFileError(description: "\(file): a document is not a mapping")
                }
                objects.append(KubernetesObject(file: file, object: object))
            }
        }
        return objects
    }

    static func kubernetesObject(kind: String, name: String) throws -> [String: Any] {
        let matches = try kubernetesObjects().filter { $0.kind == kind && $0.name == name }
        guard matches.count == 1 else {
            throw DeployFileError(description: "expected one \(kind) \(name), found \(matches.count)")
        }
        return matches[0].object
    }

    static let configMapName = "avatar-cropper-config"
    static let configFileName = "avatar-cropper.conf"

    /// The worker's config file as the ConfigMap carries it.
    static func kubernetesConfigFile() throws -> String {
        let configMap = try kubernetesObject(kind: "ConfigMap", name: configMapName)
        guard let text = configMap.map("data")?.string(configFileName) else {
            throw DeployFileError(description: "ConfigMap \(configMapName) has no \(configFileName)")
        }
        return text
    }

    /// The configuration a Kubernetes worker runs with, less the Secret's values: the ConfigMap's file
    /// through the worker's own parser (which rejects unknown keys and malformed lines).
    /// `lenient` drops lines with keys the worker does not know before parsing (the key audit reports those),
    /// so one bad key does not hide every other check that reads the configuration.
    static func kubernetesConfiguration(lenient: Bool = false) throws -> ConfigurationValues {
        var text = try kubernetesConfigFile()
        if lenient {
            text = text.split(separator: "\n").filter { line in
                let key = line.split(separator: "=", maxSplits: 1).first?.trimmingCharacters(in: .whitespaces) ?? ""
                return !line.contains("=") || key.hasPrefix("#") || ConfigurationValues.isKnown(key)
            }.joined(separator: "\n")
        }
        return try ConfigurationValues(file: text)
    }

    /// The configuration the compose worker runs with: its environment through the worker's parser.
    static func composeWorkerConfiguration() throws -> ConfigurationValues {
        try ConfigurationValues(environment: composeEnvironment(try composeService("worker")))
    }

    /// Every pod template in the Kubernetes objects (Deployments and Jobs), with where it came from.
    static func podSpecs() throws -> [(where: String, spec: [String: Any])] {
        try kubernetesObjects().compactMap { object in
            guard ["Deployment", "Job", "StatefulSet", "DaemonSet"].contains(object.kind),
                let spec = object.object.map(path: "spec.template.spec")
            else { return nil }
            return ("\(object.kind) \(object.name)", spec)
        }
    }
}

/// The memory a worker container needs: the rule of docs/DEPLOY.md, "Memory" (where each term is explained), as code
/// for the deploy-file checks.
enum MemoryRule {
    static let baselineMiB = 256
    /// A render helper's own memory (its libraries' private pages; about 33 MiB measured), one per render slot and
    /// a warm spare.
    static let helperMiB = 48

    /// Each job in flight holds its source; a rendering one also its memory file for the helper and the helper's copy.
    static func requiredMiB(budgetMB: Int, maxImageMB: Int, renderSlots: Int, jobsInFlight: Int) -> Int {
        budgetMB + baselineMiB + helperMiB * (renderSlots + 1) + maxImageMB * (2 * renderSlots + jobsInFlight)
    }

    static func requiredMiB(_ values: ConfigurationValues) throws -> Int {
        let budget = try values.int(.memoryBudgetMB) ?? 1024
        let maxImage = try values.int(.maxImageMB) ?? 40
        guard try values.int(.renderSlots) != nil else {
            // The default is the machine's core count, which a container limit does not bound.
            throw DeployFileError(description: "worker.render-slots must be set explicitly in a container")
        }
        let (renderSlots, jobsInFlight) = try WorkerFactory.concurrency(values)
        return requiredMiB(budgetMB: budget, maxImageMB: maxImage, renderSlots: renderSlots, jobsInFlight: jobsInFlight)
    }
}
