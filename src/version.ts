// The gateway's own name and version, as advertised in serverInfo (kept equal to package.json by a test).
export const GATEWAY_NAME = 'switchyard';
export const GATEWAY_VERSION = '0.1.0';
