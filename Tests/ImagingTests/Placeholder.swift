import Testing
@Test func placeholder_ImagingTests() {}
