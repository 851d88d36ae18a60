import Testing
@Test func placeholder_CropProtocolTests() {}
