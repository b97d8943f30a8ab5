package main

import (
	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/infobip"
	"github.com/heraldhq/herald/transport/metawhatsapp"
	"github.com/heraldhq/herald/transport/vonage"
)

// chatProviders is the registry of the chat providers a chat service may
// name: Herald's own protocol and the adapters built in.
func chatProviders() []chatprovider.Provider {
	return []chatprovider.Provider{chat.Provider(), vonage.Provider(), infobip.Provider(), metawhatsapp.Provider()}
}

// providerInfos describes the registry to the use cases (accounts), which
// do not import the adapters.
func providerInfos(ps []chatprovider.Provider) accounts.Providers {
	infos := make(map[string]accounts.ProviderInfo, len(ps))
	for _, p := range ps {
		infos[p.Name] = accounts.ProviderInfo{Name: p.Name, Channels: p.Channels, CheckCredentials: p.CheckCredentials, Carries: p.Carries}
	}
	return func(name string) (accounts.ProviderInfo, bool) {
		info, ok := infos[name]
		return info, ok
	}
}
