/// The configuration a process runs with, for its start log: every key that has a value (set or default),
/// secrets left out, so an operator reads what is in force without reading the layers.
extension ConfigurationValues {
    /// Key and value of every non-secret key with a value, in `ConfigurationKey.all`'s order, then the
    /// librdkafka pass-through properties by name; a secret is named with the value `<redacted>`.
    public var effectiveSettings: [(key: String, value: String)] {
        var settings: [(key: String, value: String)] = []
        for key in ConfigurationKey.all {
            guard let value = self[key] else { continue }
            settings.append((key.name, key.isSecret ? Self.redacted : value))
        }
        for (property, value) in kafkaProperties.sorted(by: { $0.key < $1.key }) {
            let secret = Self.secretPropertyMarkers.contains { property.contains($0) }
            settings.append((ConfigurationKey.kafkaPropertyPrefix + property, secret ? Self.redacted : value))
        }
        return settings
    }

    static let redacted = "<redacted>"

    /// librdkafka properties whose values are credentials (`sasl.password`, `ssl.key.password`,
    /// `sasl.oauthbearer.client.secret`, `ssl.key.pem`, `sasl.oauthbearer.config`, ...).
    static let secretPropertyMarkers = ["password", "secret", ".pem", "oauthbearer.config", "jaas"]
}
