// CropProtocol: see DESIGN §6.
