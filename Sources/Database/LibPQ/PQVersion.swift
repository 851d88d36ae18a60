import Clibpq

/// The libpq the connections run on.
public enum LibPQ {
    /// Its version as the loaded library reports it (`PQlibVersion`), e.g. "15.18".
    public static var version: String {
        let number = Int(PQlibVersion())
        // From 10 on: major * 10000 + minor; before: major * 10000 + minor * 100 + patch.
        return number >= 100_000
            ? "\(number / 10000).\(number % 10000)"
            : "\(number / 10000).\(number / 100 % 100).\(number % 100)"
    }
}
