package plan

// ProtectedSettingForTest is one entry of protectedSettings, as the external tests of
// this package see it (TestProtectedSettingsCheckedBySession): this file is compiled
// only into the package's tests, so the list stays unexported and is not copied.
type ProtectedSettingForTest struct{ Name, Why string }

// ProtectedSettingsForTest returns protectedSettings' names and reasons.
func ProtectedSettingsForTest() []ProtectedSettingForTest {
	out := make([]ProtectedSettingForTest, len(protectedSettings))
	for i, s := range protectedSettings {
		out[i] = ProtectedSettingForTest{Name: s.name, Why: s.why}
	}
	return out
}
