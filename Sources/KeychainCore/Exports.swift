// The vocabulary the engine speaks (keys, values, classes, statuses) is KeychainModel's; a
// user of the engine gets it with `import KeychainCore`, as before the two were split.
@_exported import KeychainModel
