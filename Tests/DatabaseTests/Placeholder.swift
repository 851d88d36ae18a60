import Testing
@Test func placeholder_DatabaseTests() {}
