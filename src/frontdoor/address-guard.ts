// The guard lives in util/ now, where the credentials layer's OAuth client can use it too.
export { AddressGuard, AddressRefused } from '../util/address-guard.js';
