package rollback

// TagFor exposes the session tag derivation to the external tests, which
// script a peer by hand.
var TagFor = tagFor
