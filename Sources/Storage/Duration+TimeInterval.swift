import Foundation

extension Duration {
    /// This duration in seconds, for Foundation APIs (timeouts, log figures).
    var timeInterval: TimeInterval {
        let parts = components
        return TimeInterval(parts.seconds) + TimeInterval(parts.attoseconds) / 1e18
    }
}
