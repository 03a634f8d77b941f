// Small text helpers.
exports.words = (text) => text.trim().split(/\s+/).filter(Boolean);
