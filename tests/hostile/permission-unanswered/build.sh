echo building
