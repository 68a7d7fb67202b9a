import { KeysPanel } from '../keys-panel.js';

/** The agent's access keys, which callers of a private agent present at the edge. */
export const AccessKeysTab = ({ agentId }: { agentId: string }) => <KeysPanel path={`/agents/${agentId}/access-keys`} listField="access_keys" noun="access key" />;
