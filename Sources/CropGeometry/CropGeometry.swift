// CropGeometry: see DESIGN §6.
