import Testing
@Test func placeholder_StorageTests() {}
