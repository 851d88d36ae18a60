import Foundation

/// A Dockerfile read as instructions: comments and blank lines dropped, `\` continuations joined.
struct Dockerfile {
    struct Instruction {
        var keyword: String
        var arguments: String
        var line: Int
    }

    struct Stage {
        var image: String
        var name: String?
        var instructions: [Instruction]

        func all(_ keyword: String) -> [Instruction] { instructions.filter { $0.keyword == keyword } }
        func last(_ keyword: String) -> Instruction? { all(keyword).last }
    }

    var instructions: [Instruction]

    init(text: String) {
        var instructions: [Instruction] = []
        var pending = ""
        var start = 0
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || (pending.isEmpty && line.isEmpty) { continue }
            if pending.isEmpty { start = index + 1 }
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
                continue
            }
            pending += line
            let keyword = String(pending.prefix { !$0.isWhitespace }).uppercased()
            let arguments = pending.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces)
            instructions.append(Instruction(keyword: keyword, arguments: arguments, line: start))
            pending = ""
        }
        self.instructions = instructions
    }

    /// The build stages, each from its `FROM image [AS name]`.
    var stages: [Stage] {
        var stages: [Stage] = []
        for instruction in instructions {
            if instruction.keyword == "FROM" {
                let words = instruction.arguments.split(separator: " ").map(String.init)
                    .filter { !$0.hasPrefix("--") }
                let name = words.count >= 3 && words[1].uppercased() == "AS" ? words[2] : nil
                stages.append(Stage(image: words.first ?? "", name: name, instructions: []))
            } else if !stages.isEmpty {
                stages[stages.count - 1].instructions.append(instruction)
            }
        }
        return stages
    }

    /// The words of an exec-form (`["a", "b"]`) argument list, nil for the shell form.
    static func execForm(_ arguments: String) -> [String]? {
        guard arguments.hasPrefix("["), let data = arguments.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String]
    }

    /// `ENV A=1 B="two words"` → names (the legacy `ENV NAME value` form too).
    static func environmentNames(_ arguments: String) -> [String] {
        if !arguments.contains("=") || arguments.split(separator: " ").first.map({ !$0.contains("=") }) == true {
            return arguments.split(separator: " ").first.map { [String($0)] } ?? []
        }
        var names: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            while index < arguments.endIndex, arguments[index] == " " { index = arguments.index(after: index) }
            guard let equals = arguments[index...].firstIndex(of: "=") else { break }
            names.append(String(arguments[index..<equals]))
            index = arguments.index(after: equals)
            var quote: Character?
            while index < arguments.endIndex {
                let character = arguments[index]
                if let open = quote {
                    if character == open { quote = nil }
                } else if character == "\"" || character == "'" {
                    quote = character
                } else if character == " " {
                    break
                }
                index = arguments.index(after: index)
            }
        }
        return names
    }

    /// The `COPY`/`ADD` sources taken from the build context (not `--from=` another stage).
    static func contextSources(_ instruction: Instruction) -> [String] {
        guard instruction.keyword == "COPY" || instruction.keyword == "ADD" else { return [] }
        let words = instruction.arguments.split(separator: " ").map(String.init)
        if words.contains(where: { $0.hasPrefix("--from=") }) { return [] }
        let paths = words.filter { !$0.hasPrefix("--") }
        return Array(paths.dropLast())
    }
}

/// `.dockerignore` patterns: later patterns win, `!` re-includes, `*` within a name, `**` across folders.
struct DockerIgnore {
    private var rules: [(exclude: Bool, pattern: NSRegularExpression)] = []

    init(text: String) throws {
        for raw in text.split(separator: "\n") {
            var line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let exclude = !line.hasPrefix("!")
            if !exclude { line.removeFirst() }
            rules.append((exclude, try Self.regex(Repo.normalise(line))))
        }
    }

    private static func regex(_ pattern: String) throws -> NSRegularExpression {
        var expression = "^"
        var index = pattern.startIndex
        while index < pattern.endIndex {
            let character = pattern[index]
            if pattern[index...].hasPrefix("**/") {
                expression += "(.*/)?"
                index = pattern.index(index, offsetBy: 3)
                continue
            }
            switch character {
            case "*": expression += "[^/]*"
            case "?": expression += "[^/]"
            default: expression += NSRegularExpression.escapedPattern(for: String(character))
            }
            index = pattern.index(after: index)
        }
        // A pattern naming a folder excludes everything in it.
        return try NSRegularExpression(pattern: expression + "(/.*)?$")
    }

    /// Whether a context-relative path is left out of the build context.
    func excludes(_ path: String) -> Bool {
        var excluded = false
        let range = NSRange(path.startIndex..., in: path)
        for rule in rules where rule.pattern.firstMatch(in: path, range: range) != nil {
            excluded = rule.exclude
        }
        return excluded
    }
}
