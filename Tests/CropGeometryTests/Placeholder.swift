import Testing
@Test func placeholder_CropGeometryTests() {}
